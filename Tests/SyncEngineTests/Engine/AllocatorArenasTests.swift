import Testing

@testable import SyncEngine

@Suite("The allocator's arenas in an engine's process")
struct AllocatorArenasTests {
    @Test("glibc's allocator takes the limit `ubiquity sync` and `ubiquity server` set at their start")
    func limitIsTaken() {
        #if os(Linux)
            #expect(AllocatorArenas.limitToCores())
        #endif
    }
}

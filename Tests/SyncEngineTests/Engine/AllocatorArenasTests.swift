import Foundation
import Testing

@testable import SyncEngine

@Suite("Giving free memory back to the system")
struct AllocatorArenasTests {
    @Test("Whole pages freed in the middle of a heap are given back")
    func freedPagesGoBack() {
        #if os(Linux)
            // Small blocks (below the size glibc maps on their own), one in sixteen kept: the heap cannot shrink
            // from its top, and most of its pages are free.
            var blocks = (0..<4096).map { _ in UnsafeMutableRawPointer.allocate(byteCount: 4000, alignment: 16) }
            for block in blocks { block.storeBytes(of: 1, as: UInt8.self) }
            for (index, block) in blocks.enumerated() where index % 16 != 0 { block.deallocate() }
            blocks = blocks.enumerated().filter { $0.offset % 16 == 0 }.map(\.element)
            #expect(AllocatorArenas.releaseFreeMemory())
            for block in blocks { block.deallocate() }
        #endif
    }
}

import Testing

@testable import DocumentKit

#if canImport(Glibc)
    import Glibc
#endif

/// The names `readdir` returns are read within their records: the lock files' sweep crashed the process copying a
/// whole `dirent` whose record ended at an unmapped page.
@Suite("Directory entries: names read within their records")
struct DirectoryEntryNameTests {
    @Test("An entry whose record ends where an unmapped page begins has its name read whole, and nothing past it")
    func entryEndingAtAnUnmappedPage() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let mapping = try #require(mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(mapping != MAP_FAILED)
        defer { munmap(mapping, 2 * page) }
        try #require(mprotect(mapping + page, page, PROT_NONE) == 0)

        for name in ["Grocery List.txt", "é", String(repeating: "n", count: 255)] {
            let bytes = Array(name.utf8)
            let offset = MemoryLayout<dirent>.offset(of: \.d_name)!
            // As the kernel lays records out: the name and its NUL, rounded up to 8 bytes.
            let length = (offset + bytes.count + 1 + 7) & ~7
            let record = mapping + page - length
            memset(record, 0, length)
            bytes.withUnsafeBytes { (record + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            let entry = UnsafePointer(record.assumingMemoryBound(to: dirent.self))

            let read = LinuxSystem.nameBytes(of: entry)
            #expect(Array(read) == bytes)
        }
    }
}

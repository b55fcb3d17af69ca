#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Linux interfaces that the C library declares only under `_GNU_SOURCE`, which Swift's Glibc module does not set.
enum LinuxSystem {
    /// `F_OFD_SETLK`: set an open-file-description record lock, non-blocking (same value on every Linux
    /// architecture).
    static let setOFDLock: Int32 = 37
    /// `O_PATH`: open a file only to name it, not to read or write it (generic Linux value, used by x86-64 and
    /// arm64).
    static let openPathOnly: Int32 = 0o10_000_000

    /// The kernel's id of the calling thread.
    static func currentThreadID() -> Int32 { linux_gettid() }

    /// The bytes of the name of `entry`, a `readdir` result, without its terminating NUL; valid until the next
    /// `readdir` of its stream.
    ///
    /// Read where they are: a `dirent` is only as long as its name, so a copy of the whole structure (or of its
    /// 256-byte `d_name`) reads past the record — past the end of the buffer `readdir` filled, for its last entry,
    /// and into an unmapped page when the buffer ends at one.
    static func nameBytes(of entry: UnsafePointer<dirent>) -> UnsafeBufferPointer<UInt8> {
        let name = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \.d_name)!
        return UnsafeBufferPointer(
            start: name.assumingMemoryBound(to: UInt8.self), count: strlen(name.assumingMemoryBound(to: CChar.self)))
    }
}

// glibc has exported `gettid` since 2.30; its header hides it behind `_GNU_SOURCE`. It takes no arguments and returns
// an int, so calling it through Swift's calling convention is the same as through C's.
@_silgen_name("gettid")
private func linux_gettid() -> Int32

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Starting a file's writing to disk without waiting for it, so that the flush that follows (`fsync`) finds it under
/// way: the engine's downloads and the service's chunk files use it as their bytes arrive.
public enum FileWriteback {
    /// Starts writing the dirty pages of the open file `descriptor` to disk and returns at once (Linux'
    /// `sync_file_range` with `SYNC_FILE_RANGE_WRITE`, the whole file); does nothing where the C library lacks it.
    /// A hint: nothing is durable until the file is flushed.
    public static func start(_ descriptor: Int32) {
        _ = syncFileRange?(descriptor, 0, 0, 2)  // SYNC_FILE_RANGE_WRITE
    }

    /// `sync_file_range(2)`, which Glibc's Swift module leaves out; `nil` where the C library has none.
    private static let syncFileRange: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32)? = {
        #if os(Linux)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sync_file_range") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)
        #else
            return nil
        #endif
    }()
}

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// TCP sockets on 127.0.0.1, for tests that need the wire itself: a client that misbehaves, a port that refuses.
public enum Loopback {
    /// A socket connected to 127.0.0.1:`port`; the caller closes it.
    /// - Throws: `POSIXError` when no connection could be made.
    public static func connect(port: Int) throws -> Int32 {
        let socket = try makeSocket()
        var address = address(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
            close(socket)
            throw error
        }
        return socket
    }

    /// A port that refuses connections for as long as `socket` is open: bound, never listening (unlike a port once
    /// used and closed, no other test can take it meanwhile). The caller closes the socket.
    public static func refusingPort() throws -> (socket: Int32, port: Int) {
        let socket = try makeSocket()
        var address = address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EADDRINUSE)
            close(socket)
            throw error
        }
        return (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static func makeSocket() throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        return socket
    }

    private static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

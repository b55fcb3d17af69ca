import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on 127.0.0.1 (a free port) in front of the service that counts the bytes each way: what one device
/// puts on the wire, HTTP headers and JSON bodies included, where the service's figures count chunk bytes only.
///
/// Plain blocking sockets, two threads per connection; enough for one device's few keep-alive connections.
final class ByteCountingProxy: Sendable {
    /// The port to give the device instead of the service's.
    let port: Int
    /// Bytes from the device to the service.
    let sent = Atomic<Int>(0)
    /// Bytes from the service to the device.
    let received = Atomic<Int>(0)
    private let listener: Int32
    private let target: Int
    /// Open connections: the device's socket, the service's and how many directions still run.
    private let connections = Mutex<[Int32: (upstream: Int32, pending: Int)]>([:])

    /// Starts forwarding to the service at 127.0.0.1:`target`.
    init(target: Int) throws {
        self.target = target
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw BenchError("socket: errno \(errno)") }
        var address = Loopback.address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 64) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else { throw BenchError("cannot listen on loopback: errno \(errno)") }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        // The accepting thread lives until `stop()` closes the listening socket.
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "ByteCountingProxy"
        thread.start()
    }

    /// Stops accepting and cuts every open connection.
    func stop() {
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for (client, connection) in connections.withLock({ $0 }) {
            Glibc.shutdown(client, Int32(SHUT_RDWR))
            Glibc.shutdown(connection.upstream, Int32(SHUT_RDWR))
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Loopback.address(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard upstream >= 0, connected else {
                close(client)
                if upstream >= 0 { close(upstream) }
                continue
            }
            for descriptor in [client, upstream] {
                var one: Int32 = 1
                setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            connections.withLock { $0[client] = (upstream, 2) }
            // Each direction is copied by a thread of its own until its side closes; the last one closes both.
            for upward in [true, false] {
                let thread = Thread { [self] in
                    if upward {
                        copy(from: client, to: upstream, counting: sent)
                    } else {
                        copy(from: upstream, to: client, counting: received)
                    }
                    finish(client)
                }
                thread.start()
            }
        }
    }

    /// One direction of the connection from `client` ended; the second closes both sockets.
    private func finish(_ client: Int32) {
        let upstream: Int32? = connections.withLock { connections in
            guard let (upstream, pending) = connections[client] else { return nil }
            if pending > 1 {
                connections[client] = (upstream, pending - 1)
                return nil
            }
            connections[client] = nil
            return upstream
        }
        if let upstream {
            close(client)
            close(upstream)
        }
    }

    private func copy(from source: Int32, to destination: Int32, counting counter: borrowing Atomic<Int>) {
        let capacity = 256 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let count = read(source, buffer, capacity)
            guard count > 0 else { break }
            counter.add(count, ordering: .relaxed)
            var offset = 0
            while offset < count {
                let written = write(destination, buffer + offset, count - offset)
                guard written > 0 else {
                    Glibc.shutdown(source, Int32(SHUT_RD))
                    return
                }
                offset += written
            }
        }
        Glibc.shutdown(destination, Int32(SHUT_WR))
    }
}

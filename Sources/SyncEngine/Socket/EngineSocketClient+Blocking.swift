import Foundation
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

extension EngineSocketClient {
    /// Sends one request to the engine running for `layout`'s container on a connection of its own and waits for the
    /// answer on the calling thread — for the synchronous calls that must reach another process's engine before they
    /// return (`FileVersion`'s changes). Plain blocking socket calls: nothing of Swift concurrency or of an event loop
    /// is waited on, so it cannot starve them.
    /// - Returns: The engine's answer.
    /// - Parameter timeout: The longest wait for each send and each piece of the answer: an engine that accepts the
    ///   connection and then hangs does not hang the caller.
    /// - Throws: ``ProtocolError/Code/engineUnavailable`` when no engine listens there, the connection drops or the
    ///   engine does not answer within `timeout`; the engine's refusal (``EngineResponse/Outcome/failure(_:)``) as
    ///   its ``ProtocolError``.
    public static func request(
        _ operation: EngineRequest.Operation, at layout: ContainerLayout, timeout: Duration = .seconds(30)
    ) throws -> EngineResponse.Outcome {
        let path = layout.socket.path
        func unavailable(_ what: String) -> ProtocolError {
            ProtocolError(
                .engineUnavailable, "no engine answered for container \(layout.container) (\(path): \(what))")
        }
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw unavailable(String(cString: strerror(errno))) }
        defer { Glibc.close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw unavailable("path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw unavailable(String(cString: strerror(errno))) }
        var limit = timeval(
            tv_sec: Int(timeout.components.seconds),
            tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            setsockopt(descriptor, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
        }

        let request = Array(try EngineFrame.encode(EngineRequest(id: 1, operation)).readableBytesView)
        var sent = 0
        while sent < request.count {
            let written = request.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL))
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw unavailable(String(cString: strerror(errno))) }
            sent += written
        }
        var frame: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            // Answers are one line each; events come only on subscribed connections.
            if let newline = frame.firstIndex(of: UInt8(ascii: "\n")) {
                let answer = try JSONDecoder().decode(EngineResponse.self, from: Data(frame[..<newline]))
                if case .failure(let error) = answer.outcome { throw error }
                return answer.outcome
            }
            guard frame.count <= EngineFrame.maximumResponseBytes else { throw unavailable("answer too long") }
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { throw unavailable("no answer within \(timeout)") }
            guard count > 0 else { throw unavailable("the connection closed before the answer") }
            frame += chunk[..<count]
        }
    }
}

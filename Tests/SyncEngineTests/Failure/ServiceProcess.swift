import Foundation
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `ubiquity server` as a child process on a data directory, so a test can kill it with SIGKILL and start it again
/// on the same port and data.
struct ServiceProcess: Sendable {
    let process: UbiquityProcess
    let data: URL
    let port: Int

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Makes an account in `data` with `ubiquity server add-user` (the service not running).
    static func addUser(_ name: String, password: String, data: URL, logs: URL) async throws {
        let added = try await UbiquityProcess.run(
            ["server", "add-user", name, "--data", data.path, "--bcrypt-cost", "4"],
            log: logs.appendingPathComponent("add-user.log"), input: password + "\n")
        guard added.status == 0 else { throw ChildProcessFailure("ubiquity server add-user failed: \(added.output)") }
    }

    /// Starts `ubiquity server serve` on `port` (0: any free one) and waits for the line announcing the port; a
    /// port still held by a killed predecessor is tried again for a while.
    static func start(data: URL, port: Int = 0, log: URL) async throws -> ServiceProcess {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let process = try UbiquityProcess(
                [
                    "server", "serve", "--data", data.path, "--port", "\(port)", "--bcrypt-cost", "4", "--log-level",
                    "error",
                ],
                log: log)
            while ContinuousClock.now < deadline {
                if let bound = Self.port(in: process.output) {
                    return ServiceProcess(process: process, data: data, port: bound)
                }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            await process.killAndWait()
            guard ContinuousClock.now < deadline else {
                throw ChildProcessFailure("ubiquity server did not start: \(process.outputTail())")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// The port of the `ubiquity server listening on http://HOST:PORT` line in `text`.
    private static func port(in text: String) -> Int? {
        for line in text.split(separator: "\n") where line.hasPrefix("ubiquity server listening on ") {
            guard let colon = line.split(separator: " ").dropFirst(4).first?.lastIndex(of: ":") else { continue }
            let digits = line[line.index(after: colon)...].prefix { $0.isNumber }
            if let port = Int(digits), port > 0 { return port }
        }
        return nil
    }

    /// The value of the counter or gauge `name` at `/metrics` (0 when it has no sample yet).
    func metric(_ name: String) async throws -> Double {
        let port = port
        let text = try await offPool { try Self.get("/metrics", port: port) }
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    /// A plain HTTP/1.1 GET of `path` on 127.0.0.1:`port`, answering the body of a 200 answer. Blocking.
    private static func get(_ path: String, port: Int) throws -> String {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED) }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard send(descriptor, request, request.count, 0) == request.count else { throw POSIXError(.EIO) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            answer += buffer[0..<count]
        }
        let text = String(decoding: answer, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 200"), let split = text.range(of: "\r\n\r\n") else {
            throw ChildProcessFailure("GET \(path) answered: \(text.prefix(200))")
        }
        return String(text[split.upperBound...])
    }
}

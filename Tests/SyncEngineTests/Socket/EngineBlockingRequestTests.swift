import Foundation
import SyncEngine
import Testing
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The blocking request `FileVersion`'s synchronous calls send to another process's engine.
@Suite("A blocking request to the engine's socket", .timeLimit(.minutes(1)))
struct EngineBlockingRequestTests {
    @Test("No engine listening, or one that takes the request and never answers: engineUnavailable, not a hang")
    func unavailableOrSilentEngine() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubq-blocking-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let layout = ContainerLayout(root: root, container: try ContainerID("TEAM.com.example.grocery"))
        try layout.create()
        func isUnavailable(_ error: any Error) -> Bool { (error as? ProtocolError)?.code == .engineUnavailable }

        #expect(performing: { _ = try EngineSocketClient.request(.syncNow, at: layout) }, throws: isUnavailable)

        // A listener that accepts (the kernel does, from its backlog) and never answers.
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(layout.socket.path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0 && listen(listener, 4) == 0)
        #expect(
            performing: {
                _ = try EngineSocketClient.request(.syncNow, at: layout, timeout: .milliseconds(200))
            }, throws: isUnavailable)
    }
}

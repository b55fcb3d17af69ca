import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UbiquityProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The engine's end of its unix socket, `.ubiquity/engine.sock`: other processes using the container ask the
/// running engine for its items, downloads, evictions, versions and rounds, and follow its events.
///
/// The protocol is newline-delimited JSON: each frame is one JSON object on one line. A client sends
/// ``EngineRequest``s, each with an id of its choosing; the engine answers each with an ``EngineResponse`` carrying
/// the same id. Requests on one connection run concurrently, so answers may come in another order than the
/// requests (at most ``Configuration/maximumRequestsInFlight`` at once; the engine reads no more until one is
/// answered). After a `subscribe` request the connection also receives every ``SyncEvent`` as an
/// ``EngineMessage/event(_:)`` frame. A frame that cannot be read is answered with a
/// ``ProtocolError/Code/malformedRequest`` error (or the code of the path or id that broke a rule) and the
/// connection goes on; a frame longer than ``Configuration/maximumFrameBytes`` closes the connection.
///
/// The socket file is owner-only (0600) and is put in place atomically, replacing a stale one a killed engine
/// left; bind it only while holding the container's ``EngineLock`` (``ContainerEngine`` does). ``run()`` removes it
/// when it returns.
///
/// ```swift
/// let socket = try await EngineSocketServer.bind(serving: sync)
/// try await ServiceGroup(services: [socket], logger: logger).run()
/// ```
public final class EngineSocketServer: Service, Sendable {
    /// Limits of the socket.
    public struct Configuration: Sendable {
        /// The longest request frame read, newline not counted (default 1 MiB); a longer one closes its connection.
        public var maximumFrameBytes: Int
        /// How many requests of one connection run at once (default 32).
        public var maximumRequestsInFlight: Int

        /// Creates a configuration; the defaults are documented on each field.
        public init(maximumFrameBytes: Int = 1 << 20, maximumRequestsInFlight: Int = 32) {
            self.maximumFrameBytes = maximumFrameBytes
            self.maximumRequestsInFlight = max(1, maximumRequestsInFlight)
        }
    }

    /// The container's sync the socket serves.
    public let sync: ContainerSync
    /// The socket's limits.
    public let configuration: Configuration
    let listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    let logger: Logger

    private init(
        sync: ContainerSync, configuration: Configuration,
        listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, logger: Logger
    ) {
        self.sync = sync
        self.configuration = configuration
        self.listener = listener
        self.logger = logger
    }

    /// Binds the socket of `sync`'s container: in a fresh owner-only folder, made owner-only itself, then renamed
    /// over `.ubiquity/engine.sock` (so no other user can connect in between, and a stale socket is replaced).
    /// Call it while holding the container's ``EngineLock``, then ``run()`` the server.
    /// - Throws: The system's error when the socket cannot be made (a path too long for a unix socket, say).
    public static func bind(
        serving sync: ContainerSync, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "ubiquity.engine.socket")
    ) async throws -> EngineSocketServer {
        let layout = sync.layout
        // Named short: a unix socket's path is limited to 107 bytes, and this one is only 2 longer than the final one.
        let staging = layout.privateFolder.appendingPathComponent(
            ".s-\(UUID().uuidString.prefix(8).lowercased())", isDirectory: true)
        guard mkdir(staging.path, 0o700) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { try? FileManager.default.removeItem(at: staging) }
        let bound = staging.appendingPathComponent("s").path
        let maximum = configuration.maximumFrameBytes
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: bound) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(EngineFrameDecoder(maximumFrameBytes: maximum)))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        guard chmod(bound, 0o600) == 0, rename(bound, layout.socket.path) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            try? await listener.channel.close()
            throw error
        }
        logger.debug("engine socket listening", metadata: ["path": "\(layout.socket.path)"])
        return EngineSocketServer(sync: sync, configuration: configuration, listener: listener, logger: logger)
    }

    /// Serves connections until cancelled or shut down gracefully, then closes them and removes the socket file.
    /// Call it once.
    public func run() async throws {
        defer {
            unlink(sync.layout.socket.path)
            logger.debug("engine socket closed", metadata: ["path": "\(sync.layout.socket.path)"])
        }
        try await cancelWhenGracefulShutdown {
            try await self.listener.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        }
    }
}

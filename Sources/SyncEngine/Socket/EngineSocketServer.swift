import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
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
    /// Connections accepted and not yet taken up by ``run()``, held until they are: NIO traps when a connection's
    /// async channel is dropped unfinished, which happens to one accepted as the socket closes (an app reconnecting
    /// while the engine stops). Those left when the server stops are finished and closed here.
    private let unclaimed: Unclaimed

    final class Unclaimed: Sendable {
        private let state = Mutex<(held: [ObjectIdentifier: Connection], stopped: Bool)>(([:], false))

        deinit { Self.close(state.withLock { Array($0.held.values) }) }

        /// Holds a connection just accepted, or closes it when the server has stopped.
        func hold(_ connection: Connection) {
            let late = state.withLock { state -> Bool in
                if !state.stopped { state.held[ObjectIdentifier(connection.channel)] = connection }
                return state.stopped
            }
            if late { Self.close([connection]) }
        }

        func claim(_ connection: Connection) {
            _ = state.withLock { $0.held.removeValue(forKey: ObjectIdentifier(connection.channel)) }
        }

        /// Closes every connection not taken up, and each accepted from now on.
        func stop() {
            Self.close(
                state.withLock { state in
                    defer { state = ([:], true) }
                    return Array(state.held.values)
                })
        }

        /// Finishes and closes `connections`, each held by the task doing it until it is done.
        private static func close(_ connections: [Connection]) {
            for connection in connections {
                Task { try? await connection.executeThenClose { _, _ in } }
            }
        }
    }

    private init(
        sync: ContainerSync, configuration: Configuration,
        listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>, unclaimed: Unclaimed,
        logger: Logger
    ) {
        self.sync = sync
        self.configuration = configuration
        self.listener = listener
        self.unclaimed = unclaimed
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
        let bound = staging.appendingPathComponent("s", isDirectory: false).path
        let maximum = configuration.maximumFrameBytes
        let unclaimed = Unclaimed()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(unixDomainSocketPath: bound) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(EngineFrameDecoder(maximumFrameBytes: maximum)))
                    let connection = try Connection(wrappingChannelSynchronously: channel)
                    unclaimed.hold(connection)
                    return connection
                }
            }
        guard chmod(bound, 0o600) == 0, rename(bound, layout.socket.path) == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            try? await listener.channel.close()
            throw error
        }
        logger.debug("engine socket listening", metadata: ["path": "\(layout.socket.path)"])
        return EngineSocketServer(
            sync: sync, configuration: configuration, listener: listener, unclaimed: unclaimed, logger: logger)
    }

    /// Serves connections until cancelled or shut down gracefully, then closes them and removes the socket file.
    /// Call it once.
    public func run() async throws {
        defer {
            unlink(sync.layout.socket.path)
            logger.debug("engine socket closed", metadata: ["path": "\(sync.layout.socket.path)"])
        }
        defer { unclaimed.stop() }
        try await cancelWhenGracefulShutdown {
            try await self.listener.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in connections {
                        self.unclaimed.claim(connection)
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        }
    }
}

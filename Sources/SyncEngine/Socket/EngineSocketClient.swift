import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import UbiquityProtocol

/// A connection to the running engine of a container, from another process (or the same one): the requests of
/// ``EngineRequest`` as async calls, and the engine's events as a stream.
///
/// Calls may be made concurrently; each waits for its own answer. A failed request throws the engine's
/// ``ProtocolError``; when the connection is gone every waiting call throws
/// ``ProtocolError/Code/engineUnavailable``.
///
/// ```swift
/// let engine = try await EngineSocketClient.connect(to: layout)
/// for item in try await engine.items().items where item.isPlaceholder { … }
/// try await engine.download(try ItemPath("Documents/Big.pdf"))
/// await engine.close()
/// ```
public final class EngineSocketClient: Sendable {
    private let connection: ConnectionState
    private let outgoing: AsyncStream<ByteBuffer>.Continuation
    private let reader: Task<Void, Never>

    private init(channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, logger: Logger) {
        let connection = ConnectionState()
        let (frames, outgoing) = AsyncStream.makeStream(of: ByteBuffer.self)
        self.connection = connection
        self.outgoing = outgoing
        // The connection's reader and writer, for as long as the client lives: ended by `close()` or `deinit`
        // (which cancel it), or by the engine closing the connection. It holds the connection's state, never the
        // client, so dropping the client ends it.
        reader = Task {
            do {
                try await channel.executeThenClose { inbound, outbound in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await frame in frames { try await outbound.write(frame) }
                        }
                        for try await frame in inbound { connection.receive(frame, logger: logger) }
                        group.cancelAll()
                    }
                }
            } catch {
                logger.debug("engine socket client closed", metadata: ["error": "\(error)"])
            }
            connection.end()
        }
    }

    deinit {
        outgoing.finish()
        reader.cancel()
    }

    /// Connects to the engine of `layout`'s container through `.ubiquity/engine.sock`.
    /// - Throws: ``ProtocolError/Code/engineUnavailable`` when no engine listens there.
    public static func connect(
        to layout: ContainerLayout, logger: Logger = Logger(label: "ubiquity.engine.socket.client")
    ) async throws -> EngineSocketClient {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: layout.socket.path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(
                                EngineFrameDecoder(maximumFrameBytes: EngineFrame.maximumResponseBytes))
                        )
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            return EngineSocketClient(channel: channel, logger: logger)
        } catch {
            throw ProtocolError(
                .engineUnavailable,
                "no engine is running for container \(layout.container) (\(layout.socket.path): \(error))")
        }
    }

    /// Closes the connection; calls still waiting throw ``ProtocolError/Code/engineUnavailable``.
    public func close() async {
        outgoing.finish()
        reader.cancel()
        await reader.value
    }

    /// Sends a request and waits for its answer.
    /// - Returns: The outcome; never ``EngineResponse/Outcome/failure(_:)``, which is thrown instead.
    /// - Throws: The engine's ``ProtocolError``; ``ProtocolError/Code/engineUnavailable`` when the connection is gone.
    public func send(_ operation: EngineRequest.Operation) async throws -> EngineResponse.Outcome {
        let outcome = try await withCheckedThrowingContinuation { waiter in
            guard let id = connection.register(waiter) else {
                waiter.resume(throwing: ConnectionState.closed)
                return
            }
            do {
                let frame = try EngineFrame.encode(EngineRequest(id: id, operation))
                if case .terminated = outgoing.yield(frame) { connection.fail(id, with: ConnectionState.closed) }
            } catch {
                connection.fail(id, with: error)
            }
        }
        if case .failure(let error) = outcome { throw error }
        return outcome
    }

    /// Every event the engine pushes from now on, for as long as the stream is iterated (it ends when the
    /// connection does). Returns once the engine has confirmed the subscription.
    public func events() async throws -> AsyncStream<SyncEvent> {
        let stream = connection.listen()
        _ = try await send(.subscribe)
        return stream
    }

    /// The transfers under way.
    public func transfers() async throws -> [ItemID: ItemTransfer] {
        guard case .transfers(let transfers) = try await send(.transfers) else { throw unexpected(.transfers) }
        return transfers
    }

    /// Every item the engine knows, placeholders included, and the transfers under way.
    public func items() async throws -> (items: [LocalItem], transfers: [ItemID: ItemTransfer]) {
        guard case .items(let items, let transfers) = try await send(.items) else { throw unexpected(.items) }
        return (items, transfers)
    }

    /// The item at `path`, when the engine knows one there.
    public func item(at path: ItemPath) async throws -> LocalItem? {
        guard case .item(let item) = try await send(.item(path)) else { throw unexpected(.item(path)) }
        return item
    }

    /// Downloads the current content of the item at `path`; returns when it is in place.
    public func download(_ path: ItemPath) async throws {
        try await done(.download(path))
    }

    /// Drops the local content of the item at `path`, leaving a placeholder.
    public func evict(_ path: ItemPath) async throws {
        try await done(.evict(path))
    }

    /// The kept versions of the item at `path`, newest first, and its current version.
    public func versions(of path: ItemPath) async throws -> (current: VersionID?, versions: [VersionRecord]) {
        guard case .versions(let current, let versions) = try await send(.versions(path)) else {
            throw unexpected(.versions(path))
        }
        return (current, versions)
    }

    /// Resolves the item's conflicts, keeping `keep` (`nil`: the current version).
    public func resolve(_ path: ItemPath, keeping keep: VersionID? = nil) async throws {
        try await done(.resolve(path, keeping: keep))
    }

    /// The local copy of a version of the item at `path` (the item's own file when it holds that version, else a
    /// copy in `.ubiquity/versions/`, downloaded the first time).
    public func contents(of version: VersionID, at path: ItemPath) async throws -> URL {
        guard case .file(let file) = try await send(.contents(path, version: version)) else {
            throw unexpected(.contents(path, version: version))
        }
        return URL(fileURLWithPath: file)
    }

    /// The versions of the item at `path` other than the current one, as the engine last heard them.
    public func otherVersions(of path: ItemPath) async throws -> [VersionRecord] {
        guard case .versions(_, let versions) = try await send(.otherVersions(path)) else {
            throw unexpected(.otherVersions(path))
        }
        return versions
    }

    /// Changes the item's versions one step at a time (replace the current one, mark resolved, remove).
    public func changeVersions(of path: ItemPath, _ operations: [VersionOperation]) async throws {
        try await done(.changeVersions(path, operations))
    }

    /// The container's key-value store as the device sees it.
    public func keyValues() async throws -> [String: PropertyListValue] {
        guard case .keyValues(let values) = try await send(.keyValues) else { throw unexpected(.keyValues) }
        return values
    }

    /// Writes values and removes keys of the container's key-value store (sent to the service by the engine).
    public func setKeyValues(_ puts: [String: PropertyListValue], removing removes: Set<String> = []) async throws {
        try await done(.setKeyValues(puts, removing: removes))
    }

    /// Runs a sync round now; returns when it is over.
    public func syncNow() async throws {
        try await done(.syncNow)
    }

    /// How the engine's rounds have gone: when one last ended in step, and why they fail while they do.
    public func health() async throws -> SyncHealth {
        guard case .health(let health) = try await send(.health) else { throw unexpected(.health) }
        return health
    }

    private func done(_ operation: EngineRequest.Operation) async throws {
        guard case .done = try await send(operation) else { throw unexpected(operation) }
    }

    private func unexpected(_ operation: EngineRequest.Operation) -> ProtocolError {
        ProtocolError(.internalError, "the engine's answer to \(operation.name) is of another kind")
    }
}

import DocumentKit
import Foundation
import SyncEngine
import Synchronization
import UbiquityProtocol

/// UbiquityKit in one process for one device: the configuration (root, containers, signed-in profile), the
/// containers opened so far, and the account's identity. Apple-shaped calls (`FileManager.default`'s ubiquity
/// methods, `UbiquitousKeyValueStore.default`, `MetadataQuery`) use ``default``, set by ``configure(_:)``; calls
/// taking a URL use the instance whose root holds it, so several devices can live in one process (as tests do).
///
/// ```swift
/// Ubiquity.configure(UbiquityConfiguration(containers: [try ContainerID("TEAM.com.example.grocery")],
///                                          profile: try DeviceProfile.load()))
/// guard let container = await Ubiquity.default.containerURL(forIdentifier: nil) else { return }  // signed out
/// ```
public final class Ubiquity: Sendable {
    private struct State {
        var configuration: UbiquityConfiguration
        var sessions: [ContainerID: Task<ContainerSession, any Error>] = [:]
        var opened: [ContainerID: ContainerSession] = [:]
        var closed = false
    }

    private let state: Mutex<State>
    private let identityBroadcast = EventBroadcast<UbiquityIdentityToken?>()
    private let contentProvider: UbiquityContentProvider

    private static let instances = Mutex<[Ubiquity]>([])
    private static let current = Mutex<Ubiquity?>(nil)

    /// Creates an instance for `configuration`. Most apps call ``configure(_:)`` instead, which also makes it the
    /// ``default``.
    public init(configuration: UbiquityConfiguration) {
        state = Mutex(State(configuration: configuration))
        contentProvider = UbiquityContentProvider()
        contentProvider.owner.withLock { $0 = WeakUbiquity(self) }
        DocumentContentProviders.register(contentProvider, owner: self)
        Self.instances.withLock { $0.append(self) }
    }

    /// Configures UbiquityKit for this process — once, at start — and returns the instance, which becomes
    /// ``default``.
    @discardableResult
    public static func configure(_ configuration: UbiquityConfiguration) -> Ubiquity {
        let ubiquity = Ubiquity(configuration: configuration)
        current.withLock { $0 = ubiquity }
        return ubiquity
    }

    /// The instance configured last (``configure(_:)``), or set here; before any, a signed-out one with no
    /// containers.
    public static var `default`: Ubiquity {
        get { defaultInstance() }
        set { current.withLock { $0 = newValue } }
    }

    private static func defaultInstance() -> Ubiquity {
        current.withLock { current in
            if let current { return current }
            let unconfigured = Ubiquity(
                configuration: UbiquityConfiguration(containers: [], profile: nil))
            current = unconfigured
            return unconfigured
        }
    }

    /// The instance whose root holds `url`, if any.
    package static func owning(_ url: URL) -> Ubiquity? {
        let path = url.standardizedFileURL.path
        return instances.withLock { $0 }.last { ubiquity in
            let root = ubiquity.configuration.root.path
            return path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
        }
    }

    /// Whether ``shutdown()`` was called.
    var isShutDown: Bool { state.withLock { $0.closed } }

    /// The configuration.
    public var configuration: UbiquityConfiguration { state.withLock { $0.configuration } }

    /// The signed-in account's identity; `nil` when signed out (`FileManager.ubiquityIdentityToken`).
    public var identityToken: UbiquityIdentityToken? {
        configuration.profile.map { UbiquityIdentityToken(server: $0.server, account: $0.account) }
    }

    /// Each identity change from now on (sign-in, sign-out, another account), as ``identityToken`` is after it.
    public func identityChanges() -> AsyncStream<UbiquityIdentityToken?> { identityBroadcast.stream() }

    /// Signs `profile` in (another account, or the same one again): the containers opened so far are closed, their
    /// folders then hold the new account's data only (the old account's is kept aside on this machine, not
    /// deleted), and when the identity changed ``Foundation/Notification/Name/ubiquityIdentityDidChange`` is posted.
    public func signIn(_ profile: DeviceProfile) async {
        await changeAccount(to: profile)
    }

    /// Signs out: the containers opened so far are closed, ``identityToken`` becomes `nil`, container URLs are
    /// `nil`, and ``Foundation/Notification/Name/ubiquityIdentityDidChange`` is posted.
    public func signOut() async {
        await changeAccount(to: nil)
    }

    private func changeAccount(to profile: DeviceProfile?) async {
        let before = identityToken
        let sessions = state.withLock { state in
            defer {
                state.sessions = [:]
                state.opened = [:]
            }
            state.configuration.profile = profile
            return Array(state.sessions.values)
        }
        for session in sessions { await (try? await session.value)?.close() }
        let after = identityToken
        guard before != after else { return }
        identityBroadcast.send(after)
        NotificationCenter.default.post(name: .ubiquityIdentityDidChange, object: self)
    }

    /// The URL of a container's folder, its engine started (the async form of
    /// `FileManager.url(forUbiquityContainerIdentifier:)`); `nil` when signed out or for a container the app does not
    /// use.
    /// - Parameter identifier: A container of ``UbiquityConfiguration/containers``; `nil` for the first.
    /// - Throws: ``UbiquityError/Code/engineUnavailable`` when the engine cannot be started or reached.
    public func containerURL(forIdentifier identifier: String?) async throws -> URL? {
        guard let container = container(identifier), configuration.profile != nil else { return nil }
        return try await session(for: container).layout.folder
    }

    /// Forgets that a container's folder was set up on this machine, so that the next use sets the container up
    /// afresh where its folder is gone or holds nothing now — what to do after the user chose to, when opening it
    /// failed with ``UbiquityError/Code/containerFolderMissing`` (not while its disk is merely not mounted: the
    /// container would then be downloaded again onto the disk below).
    /// - Parameter identifier: A container of ``UbiquityConfiguration/containers``; `nil` for the first.
    /// - Throws: ``UbiquityError/Code/unknownContainer`` for another container; the file system's error.
    public func forgetContainerFolder(identifier: String?) throws {
        guard let container = container(identifier) else {
            throw UbiquityError(.unknownContainer, "\(identifier ?? "no container") is not one of the app's containers")
        }
        try configuration.containerFolders.forget(layout(of: container))
    }

    /// The container `identifier` names among the app's (`nil`: the first).
    func container(_ identifier: String?) -> ContainerID? {
        let containers = configuration.containers
        guard let identifier else { return containers.first }
        return containers.first { $0.string == identifier }
    }

    /// The layout of a container under the root.
    func layout(of container: ContainerID) -> ContainerLayout {
        ContainerLayout(root: configuration.root, container: container)
    }

    /// The open session of `container`, opening it (and starting or reaching its engine) the first time.
    /// - Throws: ``UbiquityError/Code/notSignedIn``, ``UbiquityError/Code/unknownContainer``,
    ///   ``UbiquityError/Code/engineUnavailable``.
    func session(for container: ContainerID) async throws -> ContainerSession {
        let task = try state.withLock { state -> Task<ContainerSession, any Error> in
            guard !state.closed else { throw UbiquityError(.engineUnavailable, "UbiquityKit was shut down") }
            guard let profile = state.configuration.profile else {
                throw UbiquityError(.notSignedIn, "the device is not signed in")
            }
            guard state.configuration.containers.contains(container) else {
                throw UbiquityError(.unknownContainer, "\(container) is not one of the app's containers")
            }
            if let task = state.sessions[container] { return task }
            let configuration = state.configuration
            let task = Task {
                try await ContainerSession.open(container, configuration: configuration, profile: profile)
            }
            state.sessions[container] = task
            return task
        }
        do {
            let session = try await task.value
            state.withLock { state in
                if state.sessions[container] == task { state.opened[container] = session }
            }
            return session
        } catch {
            // A failed open is tried again by the next call.
            state.withLock { state in
                if state.sessions[container] == task { state.sessions[container] = nil }
            }
            if let error = error as? UbiquityError { throw error }
            throw UbiquityError(.engineUnavailable, "could not open container \(container): \(error)")
        }
    }

    /// The session already open for `container`, without opening one.
    func openedSession(for container: ContainerID) -> ContainerSession? {
        state.withLock { $0.opened[container] }
    }

    /// The container and item path of a URL inside one of the app's container folders.
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` for any other URL.
    func locate(_ url: URL) throws -> (container: ContainerID, path: ItemPath) {
        let root = configuration.root.path
        let target = url.standardizedFileURL.path
        let prefix = root.hasSuffix("/") ? root : root + "/"
        let components =
            target.hasPrefix(prefix) ? target.dropFirst(prefix.count).split(separator: "/", maxSplits: 1) : []
        guard components.count == 2,
            let container = configuration.containers.first(where: { $0.string == components[0] }),
            let path = try? ItemPath(String(components[1]))
        else {
            throw UbiquityError(.notUbiquitous, "\(url.path) is not in one of the app's containers under \(root)")
        }
        return (container, path)
    }

    /// Closes every container (stopping embedded engines) and stops answering; for the end of a test or an app.
    public func shutdown() async {
        let sessions = state.withLock { state in
            defer {
                state.sessions = [:]
                state.opened = [:]
                state.closed = true
            }
            return Array(state.sessions.values)
        }
        for session in sessions { await (try? await session.value)?.close() }
        identityBroadcast.finish()
        DocumentContentProviders.unregister(owner: self)
        Self.instances.withLock { $0.removeAll { $0 === self } }
        Self.current.withLock { if $0 === self { $0 = nil } }
    }
}

extension Notification.Name {
    /// Posted when the signed-in account changes — sign-in, sign-out, another account (Apple's
    /// `NSUbiquityIdentityDidChange`); the object is the ``Ubiquity`` instance.
    public static let ubiquityIdentityDidChange = Notification.Name("NSUbiquityIdentityDidChangeNotification")
    /// Apple's name for ``ubiquityIdentityDidChange``.
    public static let NSUbiquityIdentityDidChange = ubiquityIdentityDidChange
}

/// A weak reference to an instance, for what it owns and must not keep alive.
struct WeakUbiquity: Sendable {
    weak var value: Ubiquity?
    init(_ value: Ubiquity) { self.value = value }
}

import Foundation
import Logging
import SyncEngine
import UbiquityProtocol

/// What an app tells UbiquityKit once, at start — the equivalent of its iCloud entitlements and the signed-in
/// account: where container folders live, which containers the app uses, which device profile is signed in, and
/// where the sync engine runs.
///
/// ```swift
/// let ubiquity = Ubiquity.configure(
///     UbiquityConfiguration(containers: [try ContainerID("TEAM.com.example.grocery")], profile: try DeviceProfile.load()))
/// let documents = FileManager.default.url(forUbiquityContainerIdentifier: nil)?.appendingPathComponent("Documents")
/// ```
public struct UbiquityConfiguration: Sendable {
    /// Where a container's sync engine runs.
    public enum Engine: Hashable, Sendable {
        /// Use the engine already running for the container (`ubiquity sync`, or another app's), else run one in
        /// this process. The default.
        case automatic
        /// Run the engine in this process (failing when another process runs one).
        case embedded
        /// Use the engine another process runs (`ubiquity sync`), waiting up to ``UbiquityConfiguration/engineWait``
        /// for it to start.
        case external
    }

    /// The folder container folders live in: `<root>/<container-id>/` (default: the profile's root, given at
    /// `ubiquity login --root`, else `$XDG_DATA_HOME/ubiquity`).
    public var root: URL
    /// The app's containers, the first being the default one (`url(forUbiquityContainerIdentifier: nil)`).
    public var containers: [ContainerID]
    /// The signed-in device (written by `ubiquity login`); `nil` when signed out.
    public var profile: DeviceProfile?
    /// Where the engine runs.
    public var engine: Engine
    /// How an embedded engine treats content.
    public var sync: ContainerSync.Configuration
    /// How often an embedded engine syncs with nothing heard (default 30 s).
    public var pollInterval: Duration
    /// How long to wait for an external engine's socket (default 10 s).
    public var engineWait: Duration
    /// How long one request of an embedded engine to the service may take (default 60 s).
    public var requestTimeout: Duration
    /// Where UbiquityKit logs.
    public var logger: Logger
    /// The record of container folders set up on this machine (default: beside the device profiles), by which an
    /// embedded engine refuses a folder set up before that is gone or holds nothing now — a disk not mounted yet —
    /// rather than set it up afresh (``UbiquityError/Code/containerFolderMissing``).
    public var containerFolders: ContainerFolderRegister

    /// Creates a configuration; the defaults are documented on each field.
    public init(
        root: URL? = nil, containers: [ContainerID], profile: DeviceProfile?,
        engine: Engine = .automatic, sync: ContainerSync.Configuration = ContainerSync.Configuration(),
        pollInterval: Duration = .seconds(30), engineWait: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(60), logger: Logger = Logger(label: "ubiquity.kit"),
        containerFolders: ContainerFolderRegister = ContainerFolderRegister()
    ) {
        self.root = (root ?? profile?.rootURL ?? ContainerLayout.defaultRoot).standardizedFileURL
        self.containers = containers
        self.profile = profile
        self.engine = engine
        self.sync = sync
        self.pollInterval = pollInterval
        self.engineWait = engineWait
        self.requestTimeout = requestTimeout
        self.logger = logger
        self.containerFolders = containerFolders
    }
}

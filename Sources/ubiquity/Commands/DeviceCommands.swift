import ArgumentParser
import DocumentKit
import Foundation
import Logging
import ServiceLifecycle
import SyncEngine
import UbiquityProtocol

/// Options naming the device profile and the container folder.
struct DeviceOptions: ParsableArguments {
    @Option(help: "The device profile (several devices can live on one machine).") var profile = "device"
    @Option(
        help: "The root of container folders (default: the profile's, given at login, else $XDG_DATA_HOME/ubiquity).")
    var root: String?
    @Option(help: "How many seconds one request to the service may take.") var requestTimeout: Int64 = 60

    /// The container's folders: under `--root`, else the profile's root, else the default.
    func layout(_ container: String) throws -> ContainerLayout {
        let root =
            root.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? (try? DeviceProfile.load(profile))?.rootURL ?? ContainerLayout.defaultRoot
        return ContainerLayout(root: root, container: try ContainerID(container))
    }

    /// The signed-in profile and the sync of `container` with it (its folders made when missing; `afresh`, even
    /// where a folder set up before is gone or holds nothing now).
    func sync(
        _ container: String, configuration: ContainerSync.Configuration = ContainerSync.Configuration(),
        afresh: Bool = false, logger: Logger = Logger(label: "ubiquity.sync")
    ) throws -> (
        ContainerSync, DeviceProfile
    ) {
        let profile = try DeviceProfile.load(profile)
        let layout = try layout(container)
        let register = ContainerFolderRegister()
        if afresh { try register.forget(layout) }
        // The folder holds the signed-in account's data only: another account's is kept aside. A folder set up
        // before that holds nothing now (a disk not mounted yet) is refused, not set up afresh.
        do {
            try layout.claim(
                forAccount: ContainerLayout.accountKey(server: profile.server, account: profile.account),
                register: register)
        } catch var error as ProtocolError where error.code == .containerFolderMissing {
            error.message += " (or set the container up afresh there: `ubiquity sync --afresh`)"
            throw error
        }
        let sync = try ContainerSync(
            layout: layout,
            client: ServiceClient(baseURL: profile.server, token: profile.token, timeout: .seconds(requestTimeout)),
            device: profile.device, configuration: configuration, logger: logger)
        return (sync, profile)
    }
}

/// The container's engine as a command reaches it: the running one over its socket (`ubiquity sync`, or an app
/// with the engine embedded), else a sync of the container opened in this process for the one request.
enum DeviceEngine {
    case running(EngineSocketClient)
    case local(ContainerSync)

    /// Runs `body` with the running engine of `container`, or a local sync of it.
    static func using<Value>(
        _ container: String, options: DeviceOptions, _ body: (DeviceEngine) async throws -> Value
    ) async throws -> Value {
        let engine = try await open(container, options: options)
        do {
            let value = try await body(engine)
            await engine.close()
            return value
        } catch {
            await engine.close()
            throw error
        }
    }

    /// The running engine, else a sync of this process's own — which holds the container's engine lock, so it is
    /// never a second engine: an engine that took the lock but does not listen yet is waited for (a few seconds).
    private static func open(_ container: String, options: DeviceOptions) async throws -> DeviceEngine {
        let layout = try options.layout(container)
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            if FileManager.default.fileExists(atPath: layout.socket.path),
                let client = try? await EngineSocketClient.connect(to: layout)
            {
                return .running(client)
            }
            do {
                return .local(try options.sync(container).0)
            } catch let error as ProtocolError where error.code == .engineAlreadyRunning {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(50))  // polling for the other engine's socket to appear
            }
        }
    }

    func download(_ path: ItemPath) async throws {
        switch self {
        case .running(let engine): try await engine.download(path)
        case .local(let sync): try await sync.download(path)
        }
    }

    func evict(_ path: ItemPath) async throws {
        switch self {
        case .running(let engine): try await engine.evict(path)
        case .local(let sync): try await sync.evict(path)
        }
    }

    func versions(of path: ItemPath) async throws -> (current: VersionID?, versions: [VersionRecord]) {
        switch self {
        case .running(let engine): try await engine.versions(of: path)
        case .local(let sync): try await sync.versions(of: path)
        }
    }

    func resolve(_ path: ItemPath, keeping keep: VersionID?) async throws {
        switch self {
        case .running(let engine): try await engine.resolve(path, keeping: keep)
        case .local(let sync): try await sync.resolve(path, keeping: keep)
        }
    }

    /// The key-value store; with no engine running, after a round of this process fetched the latest (when the
    /// service is reachable).
    func keyValues() async throws -> [String: PropertyListValue] {
        switch self {
        case .running(let engine): return try await engine.keyValues()
        case .local(let sync):
            try? await sync.syncOnce(scanning: .paths([]))
            return try await sync.keyValues()
        }
    }

    /// Writes key-value changes; with no engine running they are sent at once by a round of this process.
    func setKeyValues(_ puts: [String: PropertyListValue], removing removes: Set<String>) async throws {
        switch self {
        case .running(let engine): try await engine.setKeyValues(puts, removing: removes)
        case .local(let sync):
            try await sync.setKeyValues(puts, removing: removes)
            try await sync.syncOnce(scanning: .paths([]))
        }
    }

    func close() async {
        switch self {
        case .running(let engine): await engine.close()
        case .local(let sync): sync.releaseLock()
        }
    }
}

/// `ubiquity login`: sign this device in; the password is read from standard input.
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login", abstract: "Sign this device in to a sync service (password read from standard input).")

    @Option(help: "The service's address, such as http://127.0.0.1:8080.") var server: String
    @Option(help: "The account's name.") var account: String
    @Option(help: "This device's name, shown as the saving computer of its versions.") var device: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        guard let password = readLine(strippingNewline: true), !password.isEmpty else {
            throw ValidationError("give the password on standard input")
        }
        let client = ServiceClient(baseURL: server)
        let login = try await client.login(LoginRequest(name: account, password: password, deviceName: device))
        let root = options.root.map { URL(fileURLWithPath: $0, isDirectory: true).standardizedFileURL.path }
        try DeviceProfile(
            server: server, account: account, token: login.token, device: login.info.device, root: root
        ).save(as: options.profile)
        print("signed in to \(server) as \(account) on \"\(device)\" (profile \(options.profile))")
    }
}

/// `ubiquity sync --container ID`: keep a container folder in step with the service.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Keep a container folder in step with the service (until interrupted).")

    @Option(help: "The container, such as TEAM.com.example.grocery.") var container: String
    @OptionGroup var options: DeviceOptions
    @Flag(help: "Run one sync round and exit.") var once = false
    @Flag(
        help: ArgumentHelp(
            "Set the container up afresh where a folder set up before is gone or holds nothing of it now.",
            discussion: "Without it such a folder is refused: its disk may not be mounted yet."))
    var afresh = false
    @Option(help: "Items up to this many bytes download as soon as they are heard of; larger ones on demand.")
    var eagerDownloadLimit: Int64 = 1 << 20
    @Option(
        help: "A file name extension of folders that are packages, synced as one item (such as gro); repeatable.")
    var packageExtension: [String] = []

    func validate() throws {
        for name in packageExtension
        where name.isEmpty || name.count > 32
            || !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") })
        {
            throw ValidationError(
                "--package-extension takes an extension without its dot, such as gro: not \"\(name)\"")
        }
    }

    func run() async throws {
        for (index, name) in packageExtension.enumerated() where !DocumentTypeRegistry.default.isPackageExtension(name)
        {
            DocumentTypeRegistry.default.register(
                DocumentType(
                    identifier: "ubiquity.package.\(index).\(name)", conformsTo: [DocumentType.packageIdentifier],
                    filenameExtensions: [name]))
        }
        var logger = Logger(label: "ubiquity.sync")
        logger.logLevel = .info
        let (sync, profile) = try options.sync(
            container, configuration: ContainerSync.Configuration(eagerDownloadLimit: eagerDownloadLimit),
            afresh: afresh, logger: logger)
        let layout = sync.layout
        if once {
            await sync.clearTemporaryFiles()
            try await sync.syncOnce()
            sync.releaseLock()
            print("in step: \(layout.folder.path)")
            return
        }
        print("syncing \(layout.folder.path) with \(profile.server); stop with Ctrl-C")
        AllocatorArenas.limitToCores()
        let trimming = Task { await AllocatorArenas.releaseFreeMemory(every: .seconds(1)) }
        defer { trimming.cancel() }
        let engine = ContainerEngine(sync: sync, pushToken: profile.token, logger: logger)
        try await ServiceGroup(
            configuration: .init(services: [engine], gracefulShutdownSignals: [.sigint, .sigterm], logger: logger)
        ).run()
    }
}

/// `ubiquity ls --container ID`: the items the engine knows, with their state.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List a container's items: downloaded or not, uploaded or not, in conflict, failed transfers.")

    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        let layout = try options.layout(container)
        let state = try LocalStateStore(url: layout.stateDatabase)
        for item in try state.items() {
            var notes: [String] = []
            if item.kind != .directory { notes.append(item.isPlaceholder ? "not downloaded" : "downloaded") }
            if item.kind != .directory, item.baseVersion == nil { notes.append("not uploaded") }
            if item.hasUnresolvedConflicts { notes.append("in conflict") }
            if let error = item.uploadError { notes.append("upload failed: \(error.message)") }
            if let error = item.downloadError { notes.append("download failed: \(error.message)") }
            let kind = item.kind == .directory ? "dir " : item.kind == .package ? "pkg " : "file"
            print("\(kind)  \(item.path)  \(item.size) bytes  \(notes.joined(separator: ", "))")
        }
    }
}

/// `ubiquity download PATH --container ID`: fetch a placeholder's content.
struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download", abstract: "Download the content of an item that is a placeholder.")

    @Argument(help: "The item's path in the container, such as Documents/List.txt.") var path: String
    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        let item = try ItemPath(path)
        try await DeviceEngine.using(container, options: options) { try await $0.download(item) }
        print("downloaded \(try options.layout(container).url(of: item).path)")
    }
}

/// `ubiquity evict PATH --container ID`: drop an item's local content, keeping a placeholder.
struct EvictCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict", abstract: "Drop the local content of an uploaded item, leaving a placeholder.")

    @Argument(help: "The item's path in the container, such as Documents/Big.pdf.") var path: String
    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        let item = try ItemPath(path)
        try await DeviceEngine.using(container, options: options) { try await $0.evict(item) }
        print("evicted \(try options.layout(container).url(of: item).path); `ubiquity download` brings it back")
    }
}

/// `ubiquity versions PATH --container ID`: an item's current, conflict and old versions.
struct VersionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions", abstract: "List an item's versions: current, conflict (unresolved) and old ones.")

    @Argument(help: "The item's path in the container.") var path: String
    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        let item = try ItemPath(path)
        let (current, versions) = try await DeviceEngine.using(container, options: options) {
            try await $0.versions(of: item)
        }
        for version in versions {
            let role =
                version.id == current
                ? "current" : version.isConflict && !version.isResolved ? "conflict" : "old"
            print(
                "\(version.id)  \(role)  \(WireTimestamp.string(from: version.modificationDate))  "
                    + "\(version.size) bytes  saved on \(version.savingDevice.name)")
        }
    }
}

/// `ubiquity resolve PATH --keep current|VERSION --container ID`: end an item's conflict everywhere.
struct ResolveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Resolve an item's conflict: keep one version (current by default), remove the others.")

    @Argument(help: "The item's path in the container.") var path: String
    @Option(help: "`current`, or the id of the version to keep (see `ubiquity versions`).") var keep = "current"
    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        // Bad input is refused before anything is opened or made.
        let item = try ItemPath(path)
        let version = keep == "current" ? nil : try VersionID(keep)
        try await DeviceEngine.using(container, options: options) { try await $0.resolve(item, keeping: version) }
        print("resolved \(path): kept \(keep)")
    }
}

/// `ubiquity kv get|set|remove --container ID`: the container's key-value store.
struct KeyValueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kv", abstract: "Read and write the container's key-value store (synced to every device).")

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case get, set, remove
    }

    enum ValueType: String, ExpressibleByArgument, CaseIterable {
        case string, integer, double, bool, json
    }

    @Argument(help: "get [KEY], set KEY VALUE, or remove KEY.") var action: Action
    @Argument(help: "The key.") var key: String?
    @Argument(help: "The value, for set.") var value: String?
    @Option(help: "How VALUE is read: string (default), integer, double, bool, or json (the value's JSON form).")
    var type: ValueType = .string
    @Option(help: "The container.") var container: String
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        switch action {
        case .get:
            let values = try await DeviceEngine.using(container, options: options) { try await $0.keyValues() }
            for (name, value) in values.sorted(by: { $0.key < $1.key }) where key == nil || key == name {
                print("\(name) = \(String(decoding: value.canonicalJSON(), as: UTF8.self))")
            }
            if let key, values[key] == nil { throw ValidationError("no key \(key.debugDescription)") }
        case .set:
            guard let key, let value else { throw ValidationError("give a key and a value: kv set KEY VALUE") }
            let parsed = try parse(value)
            try await DeviceEngine.using(container, options: options) {
                try await $0.setKeyValues([key: parsed], removing: [])
            }
            print("set \(key)")
        case .remove:
            guard let key else { throw ValidationError("give the key to remove: kv remove KEY") }
            try await DeviceEngine.using(container, options: options) {
                try await $0.setKeyValues([:], removing: [key])
            }
            print("removed \(key)")
        }
    }

    private func parse(_ text: String) throws -> PropertyListValue {
        switch type {
        case .string: return .string(text)
        case .integer:
            guard let number = Int64(text) else { throw ValidationError("\(text.debugDescription) is not an integer") }
            return .integer(number)
        case .double:
            guard let number = Double(text) else { throw ValidationError("\(text.debugDescription) is not a number") }
            return .double(number)
        case .bool:
            guard let flag = Bool(text) else { throw ValidationError("\(text.debugDescription) is not true or false") }
            return .bool(flag)
        case .json:
            do {
                return try JSONDecoder().decode(PropertyListValue.self, from: Data(text.utf8))
            } catch {
                throw ValidationError("not a value's JSON form (such as {\"type\":\"string\",\"value\":\"milk\"})")
            }
        }
    }
}

import DocumentKit
import Foundation
import SyncEngine
import UbiquityProtocol

extension FileManager {
    /// The signed-in account's identity, `nil` when signed out (Apple's `ubiquityIdentityToken`); it changes when
    /// the account does, and ``Foundation/Notification/Name/ubiquityIdentityDidChange`` is posted then.
    public var ubiquityIdentityToken: UbiquityIdentityToken? { Ubiquity.default.identityToken }

    /// The folder of a ubiquity container, `nil` when the device is not signed in or the app does not use the
    /// container (Apple's `url(forUbiquityContainerIdentifier:)`). The folder exists when this returns; the
    /// container's engine is started (or reached) in the background. From async code prefer
    /// ``Ubiquity/containerURL(forIdentifier:)``, which returns once the engine is there.
    /// - Parameter containerIdentifier: One of the app's containers, such as `TEAM.com.example.grocery`; `nil` for
    ///   the first.
    public func url(forUbiquityContainerIdentifier containerIdentifier: String?) -> URL? {
        let ubiquity = Ubiquity.default
        guard ubiquity.identityToken != nil, let container = ubiquity.container(containerIdentifier) else {
            return nil
        }
        let layout = ubiquity.layout(of: container)
        if ubiquity.openedSession(for: container) == nil {
            try? layout.create()
            // Opening the container starts or reaches its engine; the app goes on meanwhile, as on Apple's systems.
            Task { _ = try? await ubiquity.session(for: container) }
        }
        return layout.folder
    }

    /// Whether `url` is an item of one of the app's containers: on this machine, or a placeholder (Apple's
    /// `isUbiquitousItem(at:)`).
    public func isUbiquitousItem(at url: URL) -> Bool {
        guard let ubiquity = Ubiquity.owning(url) ?? Optional(Ubiquity.default),
            let (container, path) = try? ubiquity.locate(url)
        else { return false }
        if fileExists(atPath: url.path) { return true }
        return ubiquity.openedSession(for: container)?.item(at: path) != nil
    }

    /// Moves an item into a container (`flag` true: it starts syncing) or out of one (`flag` false: it is removed
    /// from the service and every device, and kept here at `destinationURL`) — Apple's
    /// `setUbiquitous(_:itemAt:destinationURL:)`. The move is coordinated. To move every document of a folder, call
    /// it for each (the seeds' "move all documents to the cloud" switch).
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` when the source or destination is on the wrong side,
    ///   ``UbiquityError/Code/destinationExists``, ``UbiquityError/Code/notDownloaded`` for a placeholder moved out
    ///   (download it first), or the file system's error. Nothing moves then.
    public func setUbiquitous(_ flag: Bool, itemAt url: URL, destinationURL: URL) throws {
        let ubiquity = Ubiquity.owning(flag ? destinationURL : url) ?? Ubiquity.default
        guard ubiquity.identityToken != nil else { throw UbiquityError(.notSignedIn, "the device is not signed in") }
        let inside = flag ? destinationURL : url
        let outside = flag ? url : destinationURL
        _ = try ubiquity.locate(inside)
        if (try? ubiquity.locate(outside)) != nil {
            throw UbiquityError(.notUbiquitous, "\(outside.path) is inside a container; it must be outside")
        }
        guard !fileExists(atPath: destinationURL.path) else {
            throw UbiquityError(.destinationExists, "\(destinationURL.path) already exists")
        }
        guard fileExists(atPath: url.path) else {
            throw UbiquityError(
                flag || !isUbiquitousItem(at: url) ? .itemNotFound : .notDownloaded,
                flag || !isUbiquitousItem(at: url)
                    ? "\(url.path) does not exist" : "\(url.path) is not downloaded; download it before moving it out")
        }
        try createDirectory(at: destinationURL.deletingLastPathComponent(), withIntermediateDirectories: true)
        let coordinator = FileCoordinator(filePresenter: nil)
        try coordinator.coordinate(writingItemAt: url, options: .forMoving, writingItemAt: destinationURL) { from, to in
            try moveItem(at: from, to: to)
            coordinator.item(at: from, didMoveTo: to)
        }
    }

    /// Asks for the latest content of an item to be downloaded and returns at once (Apple's
    /// `startDownloadingUbiquitousItem(at:)`); watch its resource values or a ``MetadataQuery`` for progress.
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` for a URL outside the app's containers.
    public func startDownloadingUbiquitousItem(at url: URL) throws {
        let (ubiquity, container, path) = try Self.locate(url)
        // The download goes on after this returns, as Apple's does; its outcome shows in the item's values.
        Task { try? await ubiquity.session(for: container).download(path) }
    }

    /// Downloads the latest content of an item and returns when it is in place (the async form of
    /// ``startDownloadingUbiquitousItem(at:)``).
    /// - Throws: ``UbiquityError``, or the engine's error (item not found, download failed).
    public func startDownloadingUbiquitousItem(at url: URL) async throws {
        let (ubiquity, container, path) = try Self.locate(url)
        try await Self.engineCall { try await ubiquity.session(for: container).download(path) }
    }

    /// Asks for the local content of an item to be dropped, keeping a placeholder that downloads again on demand,
    /// and returns at once (Apple's `evictUbiquitousItem(at:)`; the async form returns when it is done).
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` for a URL outside the app's containers.
    public func evictUbiquitousItem(at url: URL) throws {
        let (ubiquity, container, path) = try Self.locate(url)
        // The eviction goes on after this returns; its outcome shows in the item's values.
        Task { try? await ubiquity.session(for: container).evict(path) }
    }

    /// Drops the local content of an item, keeping a placeholder that downloads again on demand; returns when it
    /// is done.
    /// - Throws: ``UbiquityError``, or the engine's error (an item with changes not yet uploaded is not evicted).
    public func evictUbiquitousItem(at url: URL) async throws {
        let (ubiquity, container, path) = try Self.locate(url)
        try await Self.engineCall { try await ubiquity.session(for: container).evict(path) }
    }

    /// The ubiquitous resource values of an item, asked of its engine.
    /// - Throws: ``UbiquityError/Code/notUbiquitous``; ``UbiquityError/Code/itemNotFound`` when there is no item.
    public func ubiquitousResourceValues(at url: URL) async throws -> UbiquitousItemResourceValues {
        let (ubiquity, container, path) = try Self.locate(url)
        let session = try await ubiquity.session(for: container)
        if let item = try await Self.engineCall({ try await session.withEngine { try await $0.item(at: path) } }) {
            return UbiquitousItemResourceValues(
                item: item, transfer: session.transfer(of: item.id), layout: session.layout)
        }
        return try Self.unrecorded(url)
    }

    /// The values of a file the engine has not recorded yet, or `itemNotFound`.
    static func unrecorded(_ url: URL) throws -> UbiquitousItemResourceValues {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else {
            throw UbiquityError(.itemNotFound, "no item at \(url.path)")
        }
        return UbiquitousItemResourceValues(unrecordedFileOfSize: (attributes[.size] as? NSNumber)?.int64Value ?? 0)
    }

    /// The instance, container and item path of a URL.
    static func locate(_ url: URL) throws -> (Ubiquity, ContainerID, ItemPath) {
        let ubiquity = Ubiquity.owning(url) ?? Ubiquity.default
        let (container, path) = try ubiquity.locate(url)
        return (ubiquity, container, path)
    }

    /// Runs an engine call, turning the engine's and the service's errors into ``UbiquityError``s.
    static func engineCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as UbiquityError {
            throw error
        } catch let error as ProtocolError {
            switch error.code {
            case .itemNotFound: throw UbiquityError(.itemNotFound, error.message)
            case .unknownVersion: throw UbiquityError(.unknownVersion, error.message)
            case .engineUnavailable: throw UbiquityError(.engineUnavailable, error.message)
            default: throw UbiquityError(.failed, "\(error.code.rawValue): \(error.message)")
            }
        } catch {
            throw UbiquityError(.failed, "\(error)")
        }
    }
}

extension URL {
    /// The ubiquitous resource values of the item at this URL, as the container's engine last told this process
    /// (no waiting: call ``Foundation/FileManager/url(forUbiquityContainerIdentifier:)`` first, as on Apple's systems).
    /// - Throws: ``UbiquityError/Code/notUbiquitous``; ``UbiquityError/Code/itemNotFound`` when there is no item.
    public func ubiquitousResourceValues() throws -> UbiquitousItemResourceValues {
        let (ubiquity, container, path) = try FileManager.locate(self)
        if let session = ubiquity.openedSession(for: container), let item = session.item(at: path) {
            return UbiquitousItemResourceValues(
                item: item, transfer: session.transfer(of: item.id), layout: session.layout)
        }
        return try FileManager.unrecorded(self)
    }
}

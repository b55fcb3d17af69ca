import Foundation

/// Why a UbiquityKit call failed.
///
/// ```swift
/// do { try FileManager.default.evictUbiquitousItem(at: url) } catch let error as UbiquityError where error.code == .notUbiquitous { … }
/// ```
public struct UbiquityError: Error, Hashable, Sendable, CustomStringConvertible, LocalizedError {
    /// The kind of failure.
    public enum Code: String, Hashable, Sendable {
        /// The device is not signed in (no profile configured).
        case notSignedIn
        /// The container is not one of the app's (see ``UbiquityConfiguration/containers``).
        case unknownContainer
        /// The URL is not inside a container folder of this device, or names its private `.ubiquity/` folder.
        case notUbiquitous
        /// The engine knows no item at the URL.
        case itemNotFound
        /// The destination of a move already exists.
        case destinationExists
        /// The item's content is not on this machine and is needed (download it first).
        case notDownloaded
        /// The version is not one of the item's.
        case unknownVersion
        /// The container's sync engine could not be started or reached.
        case engineUnavailable
        /// Another process runs the container's engine and this configuration asked to embed one
        /// (``UbiquityConfiguration/Engine/embedded``): use ``UbiquityConfiguration/Engine/automatic`` or
        /// ``UbiquityConfiguration/Engine/external`` to use that engine instead.
        case engineAlreadyRunning
        /// The container's folder was set up on this machine and is gone or holds nothing of its sync now: its
        /// disk may not be mounted yet. Nothing is made there until it is back, or until the app calls
        /// ``Ubiquity/forgetContainerFolder(identifier:)`` to set the container up afresh.
        case containerFolderMissing
        /// The engine or the service refused the request; the message says why.
        case failed
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong, for people.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
    public var errorDescription: String? { message }
}

import Foundation
import UbiquityProtocol

/// What a check of a local copy against what the engine last recorded of it found.
enum LocalCopyCheck: Hashable, Sendable {
    /// Nothing is there.
    case absent
    /// The content last in step is there: replacing or removing it loses nothing.
    case unchanged
    /// Something else is there: a save the service does not have yet (or a file the engine never recorded).
    case changed
}

extension ContainerSync {
    /// The one rule for "the local copy has not changed since it was recorded", checked inside the coordinated
    /// write that replaces, removes or evicts it: the file must be the recorded one, unchanged
    /// (``LocalFileIdentity/isUnchanged(since:)``); when the recorded identity is racy (taken within
    /// ``LocalFileIdentity/racyInterval`` of its modification, so a same-size write in the same tick would not show),
    /// its content must also hash to the recorded content hash — and so when the identity last in step (`synced`)
    /// is racy, whatever the later observation.
    static func checkLocalCopy(
        at url: URL, recorded: LocalFileIdentity?, synced: LocalFileIdentity? = nil, contentHash: ChunkHash?,
        kind: ItemKind, scanner: LocalScanner, chunker: FileChunker
    ) -> LocalCopyCheck {
        let now: LocalFileIdentity
        do {
            now = try scanner.identity(of: url, kind: kind)
        } catch {
            // Something there that cannot be looked at whole (a package's folder that cannot be listed) is not known
            // to be unchanged.
            return scanner.disk.exists(url) ? .changed : .absent
        }
        guard let recorded, now.isUnchanged(since: recorded) else { return .changed }
        guard recorded.isRacy || synced?.isRacy == true, kind != .directory else { return .unchanged }
        guard let contentHash else { return .changed }
        let content =
            kind == .package
            ? try? LocalContent(package: url, chunker: chunker, disk: scanner.disk)
            : try? LocalContent(file: url, chunker: chunker, disk: scanner.disk)
        return content?.contentHash == contentHash ? .unchanged : .changed
    }
}

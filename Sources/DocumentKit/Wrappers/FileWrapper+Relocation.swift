import Foundation

extension FileWrapper {
    /// Follows a tree this wrapper wrote at `oldRoot` to `newRoot`, where a safe save renamed it: re-takes the
    /// identity of every regular-file member written there, so that the next save with `newRoot` as its original
    /// contents hard-links the members that did not change. Members whose file changed since are forgotten (they
    /// will be written).
    package func settleOrigins(movedFrom oldRoot: URL, to newRoot: URL) {
        let oldPath = oldRoot.standardizedFileURL.path
        let newRoot = newRoot.standardizedFileURL
        var pending: [FileWrapper] = [self]
        while let wrapper = pending.popLast() {
            if let children = wrapper.fileWrappers { pending.append(contentsOf: children.values) }
            guard let origin = wrapper.origin else { continue }
            let path = origin.url.standardizedFileURL.path
            guard path == oldPath || path.hasPrefix(oldPath + "/") else { continue }
            let relative = path.dropFirst(oldPath.count).split(separator: "/").map(String.init)
            let moved = relative.reduce(newRoot) { $0.appendingPathComponent($1, isDirectory: false) }
            let candidate = FileOrigin(url: moved, identity: origin.identity, recordedAt: origin.recordedAt)
            wrapper.origin = Self.settledOrigin(of: candidate)
        }
    }
}

import Foundation

extension FileWrapper {
    /// Implements ``addFileWrapper(_:)``.
    func addChild(_ child: FileWrapper) -> String {
        precondition(isDirectory, "addFileWrapper(_:) called on a wrapper that is not a directory")
        precondition(child !== self, "a directory wrapper cannot contain itself")
        guard let name = child.preferredFilename, !name.isEmpty else {
            preconditionFailure("addFileWrapper(_:) needs a child with a preferredFilename")
        }
        if let key = key(for: child) { return key }
        return insert(child, preferring: name)
    }

    /// Implements ``addRegularFile(withContents:preferredFilename:)``.
    func addRegularFileChild(withContents contents: Data, preferredFilename: String) -> String {
        let child = FileWrapper(regularFileWithContents: contents)
        child.preferredFilename = preferredFilename
        return addFileWrapper(child)
    }

    /// Implements ``removeFileWrapper(_:)``.
    func removeChild(_ child: FileWrapper) {
        guard case .directory(var children) = storage, let key = key(for: child) else { return }
        children[key] = nil
        storage = .directory(children)
        child.removeParent(self)
    }

    /// Implements ``keyForFileWrapper(_:)``.
    func key(for child: FileWrapper) -> String? {
        guard case .directory(let children) = storage else { return nil }
        return children.first { $0.value === child }?.key
    }

    /// Stores `child` under `name` or a unique variant and returns the key.
    func insert(_ child: FileWrapper, preferring name: String) -> String {
        guard case .directory(var children) = storage else { return name }
        let key = MemberName.unique(name) { children[$0] != nil }
        children[key] = child
        storage = .directory(children)
        child.addParent(self)
        return key
    }

    /// Moves `child` to a key derived from `name` after its preferred filename changed.
    func rekey(_ child: FileWrapper, preferring name: String) {
        guard case .directory(var children) = storage, let key = key(for: child), key != name else {
            return
        }
        children[key] = nil
        storage = .directory(children)
        _ = insert(child, preferring: name)
    }
}

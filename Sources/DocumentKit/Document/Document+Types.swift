import Foundation

extension Document {
    /// The state of a document, as an option set — UIDocument's `UIDocument.State`.
    ///
    /// `normal` is the empty set: open, editable, no conflicts, no errors.
    public struct State: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The state's bits.
        public let rawValue: UInt
        /// Creates a state from its raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// Open, editable, no conflicts or errors.
        public static let normal: State = []
        /// Not open, or opening failed.
        public static let closed = State(rawValue: 1 << 0)
        /// The item has unresolved conflict versions.
        public static let inConflict = State(rawValue: 1 << 1)
        /// The last save failed; cleared by the next good save.
        public static let savingError = State(rawValue: 1 << 2)
        /// Editing is not safe now (revert or close in progress, or a revert failed).
        public static let editingDisabled = State(rawValue: 1 << 3)
        /// ``Document/progress`` describes a download or load in progress.
        public static let progressAvailable = State(rawValue: 1 << 4)

        /// The set states' names, such as `inConflict, savingError`; `normal` when none is set.
        public var description: String {
            if isEmpty { return "normal" }
            let names: [(State, String)] = [
                (.closed, "closed"), (.inConflict, "inConflict"), (.savingError, "savingError"),
                (.editingDisabled, "editingDisabled"), (.progressAvailable, "progressAvailable"),
            ]
            return names.filter { contains($0.0) }.map(\.1).joined(separator: ", ")
        }
    }

    /// How the change count moves — UIDocument's `UIDocument.ChangeKind`.
    public enum ChangeKind: Int, Sendable {
        /// A change was made.
        case done
        /// A change was undone.
        case undone
        /// An undone change was redone.
        case redone
        /// The document is clean: no unsaved changes.
        case cleared
    }

    /// Why a document is being saved — UIDocument's `UIDocument.SaveOperation`.
    public enum SaveOperation: Int, Sendable {
        /// The first save: the file must not exist yet.
        case forCreating
        /// Saving over the existing file.
        case forOverwriting
    }

    /// Posted on the main actor, with the document as object, whenever ``Document/documentState`` changes.
    public static let stateChangedNotification = Notification.Name("UIDocumentStateChangedNotification")
}

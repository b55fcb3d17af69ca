/// The change count of a document and the tokens that let a save clear only the changes it wrote.
///
/// `changeCount` counts unsaved changes relative to the file (done and redone add one, undone takes one away, so
/// undoing back to the saved state leaves the document clean). `serial` moves with every change of any kind. A save
/// takes a token before it snapshots the contents; when it finishes, the changes the token saw are subtracted, so
/// edits made while the save was in flight stay unsaved.
struct ChangeTracking: Sendable, Equatable {
    /// What a save saw when it took its snapshot.
    struct Token: Sendable, Equatable {
        let serial: UInt64
        let changeCount: Int
    }

    private(set) var changeCount = 0
    private(set) var serial: UInt64 = 0

    var hasUnsavedChanges: Bool { changeCount != 0 }

    mutating func apply(_ change: Document.ChangeKind) {
        serial &+= 1
        switch change {
        case .done, .redone: changeCount += 1
        case .undone: changeCount -= 1
        case .cleared: changeCount = 0
        }
    }

    func token() -> Token {
        Token(serial: serial, changeCount: changeCount)
    }

    /// Records that the contents seen by `token` are now on disk.
    mutating func saved(_ token: Token) {
        if token.serial == serial {
            changeCount = 0
        } else {
            changeCount -= token.changeCount
            if changeCount == 0 { changeCount = 1 }  // different edits that net to zero are still unsaved
        }
    }
}

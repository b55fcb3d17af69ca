extension ProtocolError.Code {
    /// A delete was based on a version that is no longer current; nothing was deleted (the body names the current
    /// version, so the device can decide again).
    public static let staleDelete = Self(rawValue: "staleDelete")
    /// The version named is not one of the item's versions.
    public static let unknownVersion = Self(rawValue: "unknownVersion")
    /// Only a conflict version can be marked resolved.
    public static let notAConflict = Self(rawValue: "notAConflict")
    /// The current version cannot be removed; replace it with another version first.
    public static let cannotRemoveCurrent = Self(rawValue: "cannotRemoveCurrent")
    /// The item is deleted; it has no current version to act on.
    public static let itemDeleted = Self(rawValue: "itemDeleted")
}

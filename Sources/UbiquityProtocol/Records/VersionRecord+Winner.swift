extension VersionRecord {
    /// The version that is current among `versions`: THE rule every device and the server use, so all of
    /// them pick the same winner of a conflict without talking to each other.
    ///
    /// The winner has the latest ``modificationDate`` as the wire holds it (compared in whole microseconds,
    /// ``WireTimestamp/microseconds(of:)``); among versions with the same date, the greater ``id`` (by its
    /// lowercase string) wins. The result does not depend on the order of `versions`.
    /// Callers pass the candidates (typically the current version and the unresolved conflict versions).
    ///
    /// - Returns: The winner, or `nil` when `versions` is empty.
    public static func winner(among versions: some Sequence<VersionRecord>) -> VersionRecord? {
        versions.max { precedes($0, $1) }
    }

    /// Whether `lhs` loses to `rhs` under ``winner(among:)``.
    public static func precedes(_ lhs: VersionRecord, _ rhs: VersionRecord) -> Bool {
        let left = WireTimestamp.microseconds(of: lhs.modificationDate)
        let right = WireTimestamp.microseconds(of: rhs.modificationDate)
        return left != right ? left < right : lhs.id < rhs.id
    }
}

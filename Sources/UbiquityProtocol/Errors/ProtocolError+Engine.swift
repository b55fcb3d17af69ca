extension ProtocolError.Code {
    /// The local copy has changes the service does not have yet, so it cannot be evicted.
    public static let notUploaded = Self(rawValue: "notUploaded")
}

extension ProtocolError {
    /// The error for a change token the server does not know or no longer keeps: the device must forget its
    /// state for the container and resync from scratch (ask for the feed without a token).
    public static func changeTokenExpired(_ token: ChangeToken) -> ProtocolError {
        ProtocolError(.changeTokenExpired, "change token \"\(token)\" is unknown or expired; resync from scratch")
    }
}

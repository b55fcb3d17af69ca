import UbiquityProtocol

extension ProtocolError.Code {
    /// No engine is running for the container (nothing listens on its socket), or the connection to it closed.
    public static let engineUnavailable = Self(rawValue: "engineUnavailable")
}

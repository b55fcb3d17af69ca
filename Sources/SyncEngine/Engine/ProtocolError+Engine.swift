import UbiquityProtocol

extension ProtocolError.Code {
    /// No engine is running for the container (nothing listens on its socket), or the connection to it closed.
    public static let engineUnavailable = Self(rawValue: "engineUnavailable")
    /// Another engine holds the container's lock (``EngineLock``): this one may not run. Not a transient failure —
    /// retrying changes nothing until that engine ends; use it through its socket instead.
    public static let engineAlreadyRunning = Self(rawValue: "engineAlreadyRunning")
}

extension ProtocolError.Code {
    // MARK: Requests

    /// The body or query is not what the route takes: not JSON, a wrong type, a missing field.
    public static let malformedRequest = Self(rawValue: "malformedRequest")
    /// The body is larger than the service accepts for this route.
    public static let bodyTooLarge = Self(rawValue: "bodyTooLarge")
    /// No route has this path.
    public static let routeNotFound = Self(rawValue: "routeNotFound")
    /// The route exists but not with this method.
    public static let methodNotAllowed = Self(rawValue: "methodNotAllowed")
    /// The service failed; the request may be retried. Never caused by the request's content.
    public static let internalError = Self(rawValue: "internalError")

    // MARK: Accounts and tokens

    /// No bearer token, or one the service does not know or has revoked.
    public static let unauthorized = Self(rawValue: "unauthorized")
    /// The account name or password is wrong.
    public static let invalidCredentials = Self(rawValue: "invalidCredentials")
    /// The operator has not enabled open registration; accounts are made with `ubiquity server add-user`.
    public static let registrationClosed = Self(rawValue: "registrationClosed")
    /// An account with this name exists already.
    public static let accountExists = Self(rawValue: "accountExists")
    /// An account name or password breaks the rules (length, characters).
    public static let invalidAccount = Self(rawValue: "invalidAccount")
    /// The token is not allowed to use this container.
    public static let containerNotPermitted = Self(rawValue: "containerNotPermitted")
    /// No token with this id belongs to the account.
    public static let tokenNotFound = Self(rawValue: "tokenNotFound")

    // MARK: Items and chunks

    /// No item with this id is in the container (of this account).
    public static let itemNotFound = Self(rawValue: "itemNotFound")
    /// An item with this id exists already with another path or kind.
    public static let itemExists = Self(rawValue: "itemExists")
    /// A version with this id exists already with other content.
    public static let versionExists = Self(rawValue: "versionExists")
    /// A version's manifest does not fit its item's kind (a package manifest for a file, content for a folder).
    public static let kindMismatch = Self(rawValue: "kindMismatch")
    /// The account has no chunk with this hash.
    public static let chunkNotFound = Self(rawValue: "chunkNotFound")
    /// An uploaded chunk's bytes do not have the hash it was sent under; nothing was stored.
    public static let chunkHashMismatch = Self(rawValue: "chunkHashMismatch")
    /// A version names chunks the account has not uploaded (listed in ``ProtocolError/missingChunks``).
    public static let chunksMissing = Self(rawValue: "chunksMissing")
    /// The account's storage quota would be exceeded; nothing was accepted.
    public static let quotaExceeded = Self(rawValue: "quotaExceeded")
    /// A draft's chunks were sent from a position other than the draft's length (the service forgot the draft, or
    /// an earlier part did not arrive).
    public static let draftOutOfStep = Self(rawValue: "draftOutOfStep")
}

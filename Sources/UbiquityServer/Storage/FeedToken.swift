import UbiquityProtocol

/// The contents of a change token: which feed (a container's change feed or its key-value store), which
/// incarnation of it (the epoch, random per container), and how many entries precede the position.
///
/// Written as `f1.<epoch>.<sequence>` (change feed) or `k1.<epoch>.<sequence>` (key-value store); devices treat it
/// as opaque. A token at sequence 0 names the beginning and is valid for any epoch.
struct FeedToken: Hashable, Sendable {
    enum Feed: String, Sendable {
        case changes = "f1"
        case keyValues = "k1"
    }

    var feed: Feed
    var epoch: String
    var sequence: Int64

    var token: ChangeToken { ChangeToken("\(feed.rawValue).\(epoch).\(sequence)") }

    init(feed: Feed, epoch: String, sequence: Int64) {
        self.feed = feed
        self.epoch = epoch
        self.sequence = sequence
    }

    /// Reads `token` as a position in the `feed` of a container whose epoch is `epoch` and whose latest
    /// sequence number is `latest`.
    /// - Throws: ``ProtocolError/Code/changeTokenExpired`` for a token of another feed, another epoch, or a
    ///   position after the latest.
    init(_ token: ChangeToken, feed: Feed, epoch: String, latest: Int64) throws(ProtocolError) {
        let parts = token.string.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == feed.rawValue, let sequence = Int64(parts[2]), sequence >= 0,
            sequence == 0 || (parts[1] == epoch && sequence <= latest)
        else { throw ProtocolError.changeTokenExpired(token) }
        self.init(feed: feed, epoch: epoch, sequence: sequence)
    }
}

/// One page of a container's change feed: the answer to `GET …/changes?since=TOKEN&limit=N`.
public struct ChangePage: Hashable, Sendable, Codable {
    /// The changes after the requested token, oldest first.
    public var changes: [Change]
    /// The token to ask with next; it names the position after the last change of this page.
    public var nextToken: ChangeToken
    /// Whether more changes follow right away (ask again with ``nextToken`` without waiting for a push).
    public var hasMore: Bool

    /// Creates a page.
    public init(changes: [Change], nextToken: ChangeToken, hasMore: Bool) {
        self.changes = changes
        self.nextToken = nextToken
        self.hasMore = hasMore
    }
}

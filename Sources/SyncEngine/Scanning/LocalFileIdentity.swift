import DocumentKit

/// What the scanner compares to tell whether a file changed without reading it: DocumentKit's ``FileIdentity``, the
/// one identity type of documents, presenters and the engine, with its one rule for "unchanged"
/// (``FileIdentity/isUnchanged(since:)``) and for racy identities (``FileIdentity/isRacy``). Equal identities mean
/// "unchanged"; the same device and inode at another path mean "moved". A package's identity, as the scanner takes
/// it, is its folder's device and inode with its members' total size and latest times.
public typealias LocalFileIdentity = FileIdentity

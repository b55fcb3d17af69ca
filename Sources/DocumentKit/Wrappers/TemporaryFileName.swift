/// Names of the files a save writes for a moment and renames or removes when done: never documents of their own.
/// Presenters are not told of them, and the sync engine never uploads them.
///
/// The rule, by the file's name alone:
/// - a safe save's hidden temporary sibling: a leading `.` and a `.tmp` ending (``SafeFileWriter``'s
///   `.<name>.<hex>.tmp`, Foundation's `.<UUID>.tmp`);
/// - Vim's swap files (`.name.swp`, `.swo` … `.swa`) and its write test `4913`;
/// - Emacs's lock (`.#name`) and auto-save (`#name#`) files;
/// - backup copies ending in `~`;
/// - LibreOffice's lock files (`.~lock.name#`);
/// - partial downloads of common tools (`.part`, `.crdownload`).
///
/// ```swift
/// TemporaryFileName.isTemporary(".List.txt.3f2a.tmp")  // true
/// TemporaryFileName.isTemporary("List.txt")  // false
/// ```
public enum TemporaryFileName {
    /// Whether `name` (a file's last path component) names a save's temporary file.
    public static func isTemporary(_ name: Substring) -> Bool {
        if name.count > 5 && name.hasPrefix(".") && name.hasSuffix(".tmp") { return true }
        if name == "4913" || name.hasPrefix(".#") || name.hasPrefix(".~lock.") { return true }
        if name.count > 2 && name.hasPrefix("#") && name.hasSuffix("#") { return true }
        if name.count > 1 && name.hasSuffix("~") { return true }
        if name.hasSuffix(".part") || name.hasSuffix(".crdownload") { return true }
        // Vim's swap files: a hidden `.name.swp`, then `.swo`, `.swn` … `.swa` when those are taken.
        if name.hasPrefix("."), let dot = name.lastIndex(of: "."), dot != name.startIndex {
            let suffix = name[name.index(after: dot)...]
            if suffix.count == 3, suffix.hasPrefix("sw"), let last = suffix.last, ("a"..."p").contains(last) {
                return true
            }
        }
        return false
    }

    /// Whether `name` names a save's temporary file.
    public static func isTemporary(_ name: String) -> Bool { isTemporary(name[...]) }
}

import Foundation

/// The rules for names of members of a directory wrapper.
///
/// A name is refused when it is empty, `.` or `..`, contains `/` or NUL, or is longer than
/// ``maximumLength`` bytes of UTF-8: such a name would escape its directory or could not be created.
package enum MemberName {
    /// The longest name, in bytes of UTF-8, most Linux file systems accept.
    package static let maximumLength = 255

    /// Whether `name` is acceptable as a member name.
    package static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= maximumLength && name != "." && name != ".."
            && !bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0)
    }

    /// Throws ``FileWrapperError/Code/invalidFilename`` unless `name` is acceptable.
    ///
    /// - Parameters:
    ///   - name: The member name.
    ///   - directory: The directory the member belongs to, for the error.
    package static func validate(_ name: String, in directory: URL?) throws(FileWrapperError) {
        guard isValid(name) else {
            throw FileWrapperError(
                code: .invalidFilename,
                message: "refused member name \(name.debugDescription)",
                url: directory
            )
        }
    }

    /// A name derived from `name` that is not in `taken`: `name` itself if free, else "name 2.ext",
    /// "name 3.ext" and so on (the number goes before the extension; a leading dot does not start one).
    package static func unique(_ name: String, avoiding taken: (String) -> Bool) -> String {
        guard taken(name) else { return name }
        let (base, suffix) = split(name)
        var number = 2
        while true {
            var trimmedBase = base
            var candidate = "\(trimmedBase) \(number)\(suffix)"
            while candidate.utf8.count > maximumLength, !trimmedBase.isEmpty {
                trimmedBase.removeLast()
                candidate = "\(trimmedBase) \(number)\(suffix)"
            }
            if !taken(candidate) { return candidate }
            number += 1
        }
    }

    /// Splits "name.ext" into ("name", ".ext"); ".hidden" and "name" have no extension.
    private static func split(_ name: String) -> (base: String, suffix: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex
        else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }
}

import Foundation

extension ChildProcess {
    /// Where a child's standard input comes from.
    public enum Input: Sendable, Equatable {
        /// `/dev/null`: the child reads end of file at once.
        case nullDevice
        /// A pipe: the parent writes with ``ChildProcess/writeInput(_:)`` and ends the input with
        /// ``ChildProcess/closeInput()``.
        case pipe
    }

    /// Where a child's standard output or standard error goes.
    public enum Output: Sendable, Equatable {
        /// The parent's own descriptor: the child writes where the test process writes.
        case inherit
        /// `/dev/null`.
        case nullDevice
        /// The file at `url`, created when missing (mode 0644), emptied first unless `append` is set.
        case file(URL, append: Bool = false)
        /// A pipe whose read end the parent keeps (``ChildProcess/readAllOutput()``,
        /// ``ChildProcess/standardOutputDescriptor``).
        case pipe
        /// Only for standard error: the same destination as standard output (`2>&1`), sharing its file offset or
        /// its pipe.
        case sameAsStandardOutput
    }
}

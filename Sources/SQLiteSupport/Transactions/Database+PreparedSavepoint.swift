import GRDB

extension Database {
    /// Runs `body` inside a savepoint, as GRDB's `inSavepoint` does, with its statements prepared once per connection
    /// rather than parsed anew each time: the engine's and the service's group commits open one for each of hundreds
    /// of operations a second, and preparing `SAVEPOINT` and `RELEASE` cost more than some of those operations did.
    ///
    /// If `body` throws (or the savepoint cannot be released), what it wrote is rolled back, the error is thrown,
    /// and the enclosing transaction goes on without it. Call it inside a transaction.
    ///
    /// ```swift
    /// try db.inPreparedSavepoint { try apply(operation, in: db) }
    /// ```
    public func inPreparedSavepoint<Value>(_ body: () throws -> Value) throws -> Value {
        try cachedStatement(sql: "SAVEPOINT operation").execute()
        do {
            let value = try body()
            try cachedStatement(sql: "RELEASE SAVEPOINT operation").execute()
            return value
        } catch {
            // After some failures SQLite has already rolled the whole transaction back, and these fail too.
            try? cachedStatement(sql: "ROLLBACK TO SAVEPOINT operation").execute()
            try? cachedStatement(sql: "RELEASE SAVEPOINT operation").execute()
            throw error
        }
    }
}

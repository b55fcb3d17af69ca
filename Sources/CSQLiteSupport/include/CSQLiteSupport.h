#ifndef CSQLITESUPPORT_H
#define CSQLITESUPPORT_H

/// Empties the database of `connection` (an `sqlite3 *`) in place, its schema and content, even when its file is
/// damaged: SQLite's documented reset (`SQLITE_DBCONFIG_RESET_DATABASE` around a `VACUUM`). `sqlite3_db_config` takes
/// variable arguments, which Swift cannot call. Returns SQLite's result code.
int csqlite_reset_database(void *connection);

/// The same reset of the database file at `path`, through a connection of its own opened and closed here (for a
/// database too damaged for GRDB to open). Returns SQLite's result code.
int csqlite_reset_database_file(const char *path);

#endif

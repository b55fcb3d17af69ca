#include <sqlite3.h>

#include "CSQLiteSupport.h"

int csqlite_reset_database(void *connection) {
    sqlite3 *db = connection;
    int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 1, 0);
    if (rc != SQLITE_OK) {
        return rc;
    }
    rc = sqlite3_exec(db, "VACUUM", 0, 0, 0);
    int off = sqlite3_db_config(db, SQLITE_DBCONFIG_RESET_DATABASE, 0, 0);
    return rc != SQLITE_OK ? rc : off;
}

int csqlite_reset_database_file(const char *path) {
    sqlite3 *db = 0;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, 0);
    if (rc == SQLITE_OK) {
        // Reading the schema first keeps the database in WAL mode through the reset when it was; its failure (the
        // damage itself) is what is being reset.
        sqlite3_exec(db, "SELECT 1 FROM sqlite_master LIMIT 1", 0, 0, 0);
        rc = csqlite_reset_database(db);
    }
    sqlite3_close(db);
    return rc;
}

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

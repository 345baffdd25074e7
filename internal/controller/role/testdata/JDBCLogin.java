// JDBCLogin logs in through the PostgreSQL JDBC driver with the URL in the
// environment variable JDBC_URL (not an argument: other local users can read
// a process's arguments, and the URL holds a password) and prints
// current_user. TestRoleLifecycle runs it with `java -cp <driver> <this file>`.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

public class JDBCLogin {
    public static void main(String[] args) throws Exception {
        String url = System.getenv("JDBC_URL");
        if (url == null || url.isEmpty()) {
            System.err.println("JDBC_URL is not set");
            System.exit(2);
        }
        try (Connection c = DriverManager.getConnection(url);
             Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT current_user")) {
            r.next();
            System.out.println(r.getString(1));
        }
    }
}

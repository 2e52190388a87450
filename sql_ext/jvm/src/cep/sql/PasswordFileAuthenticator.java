package cep.sql;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.spec.InvalidKeySpecException;
import java.util.Base64;
import java.util.List;

import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.security.sasl.AuthenticationException;

import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * Checks the SQL server's user names and passwords against the users file (issue 21).
 *
 * <p>HiveServer2's {@code CUSTOM} authentication calls {@link #Authenticate} once per connection.
 * The file is the one {@code python -m jobs users add} writes (jobs/servers/users.py), named by
 * the JVM's system property {@code cep.server.users}; it is read at every connection, so users
 * added or removed take effect without a restart. One line per user:
 *
 * <pre>name:pbkdf2-sha256:iterations:salt(base64):hash(base64)</pre>
 *
 * <p>The hash is PBKDF2 with HMAC-SHA-256 of the UTF-8 password, compared in constant time; an
 * unknown name costs the same work as a wrong password, and both get the same message. A file
 * that cannot be read refuses everyone.
 */
public final class PasswordFileAuthenticator implements PasswdAuthenticationProvider {

    /** The system property that names the users file. */
    public static final String FILE_PROPERTY = "cep.server.users";

    private static final String SCHEME = "pbkdf2-sha256";
    private static final int DUMMY_ITERATIONS = 200_000;
    private static final byte[] DUMMY_SALT = new byte[16];

    @Override
    public void Authenticate(String user, String password) throws AuthenticationException {
        String file = System.getProperty(FILE_PROPERTY);
        if (file == null || file.isEmpty()) {
            throw new AuthenticationException("CEP-JOB-063: the server has no users file");
        }
        String[] entry = find(Paths.get(file), user == null ? "" : user);
        char[] given = password == null ? new char[0] : fromSasl(password).toCharArray();
        boolean ok;
        if (entry == null) {
            hash(given, DUMMY_SALT, DUMMY_ITERATIONS, 32);
            ok = false;
        } else {
            try {
                byte[] salt = Base64.getDecoder().decode(entry[3]);
                byte[] expected = Base64.getDecoder().decode(entry[4]);
                byte[] found = hash(given, salt, Integer.parseInt(entry[2]), expected.length);
                ok = MessageDigest.isEqual(found, expected);
            } catch (IllegalArgumentException malformed) {  // bad base64 or iteration count
                throw new AuthenticationException("CEP-JOB-063: the users file's line of this user is malformed");
            }
        }
        if (!ok) {
            throw new AuthenticationException("CEP-JOB-063: wrong user name or password");
        }
    }

    /**
     * The password a client sent, as the client typed it.
     *
     * <p>HiveServer2's SASL PLAIN server turns every byte of the UTF-8 message into one char,
     * sign-extended ({@code (char) b}), so a byte 0xC3 arrives as U+FFC3. Taking each char's low
     * byte gives the client's UTF-8 bytes back. A string with other chars above U+00FF did not
     * come that way and is taken as it is.
     */
    static String fromSasl(String received) {
        byte[] bytes = new byte[received.length()];
        for (int i = 0; i < received.length(); i++) {
            char c = received.charAt(i);
            if (c > 0xFF && c < 0xFF80) {
                return received;
            }
            bytes[i] = (byte) c;
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** The fields of ``user``'s line, or null when there is none (or the file is unreadable). */
    private static String[] find(Path file, String user) throws AuthenticationException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException unreadable) {
            throw new AuthenticationException("CEP-JOB-063: the server's users file cannot be read");
        }
        for (String line : lines) {
            String[] fields = line.trim().split(":");
            if (fields.length == 5 && fields[0].equals(user) && SCHEME.equals(fields[1])) {
                return fields;
            }
        }
        return null;
    }

    private static byte[] hash(char[] password, byte[] salt, int iterations, int length) {
        // The JDK's PBKDF2 encodes the chars as UTF-8: the bytes the Python side hashes.
        try {
            SecretKeyFactory factory = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
            return factory.generateSecret(new PBEKeySpec(password, salt, iterations, length * 8)).getEncoded();
        } catch (NoSuchAlgorithmException | InvalidKeySpecException broken) {
            throw new IllegalStateException("PBKDF2WithHmacSHA256 is unavailable", broken);
        }
    }
}

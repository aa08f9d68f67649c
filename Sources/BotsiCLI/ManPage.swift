/// `docs/botsi-restore.1`, generated from the option table (`scripts/docs.sh`).
public enum ManPage {
    public static func roff() -> String {
        ".TH BOTSI-RESTORE 1\n"
    }
}

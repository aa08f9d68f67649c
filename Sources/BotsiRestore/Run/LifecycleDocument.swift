/// `docs/lifecycle.md`, generated from the outcome policy's own table (`scripts/docs.sh`).
public enum LifecycleDocument {
    public static func markdown() -> String {
        "# Row lifecycle\n\n(not generated yet)\n"
    }
}

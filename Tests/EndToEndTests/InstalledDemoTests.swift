import BotsiTestSupport
import Foundation
import Testing

/// The layout the .deb installs (`<prefix>/bin/botsi-restore`, `<prefix>/share/botsi-restore/demo.csv`):
/// the demo works from any directory and its hints name the program as it is typed.
@Suite("an installed demo")
struct InstalledDemoTests {
    @Test func theDemoRunsFromAnyDirectoryAndItsHintsNameTheCommandOnPath() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let workspace = Workspace()
        let prefix = workspace.file("usr")
        let manager = FileManager.default
        try manager.createDirectory(atPath: prefix + "/bin", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: prefix + "/share/botsi-restore", withIntermediateDirectories: true)
        try manager.copyItem(atPath: binary, toPath: prefix + "/bin/botsi-restore")
        try manager.copyItem(
            atPath: Locations.packageRoot + "/samples/demo.csv", toPath: prefix + "/share/botsi-restore/demo.csv")
        let elsewhere = workspace.file("elsewhere")
        try manager.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)

        var environment = Child.environment(key: nil)
        environment["PATH"] = prefix + "/bin:" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["TMPDIR"] = workspace.path
        let child = try Child(
            ["demo"], key: nil, in: workspace, workingDirectory: elsewhere, environment: environment,
            executable: prefix + "/bin/botsi-restore")
        let finished = child.wait(timeout: 120)
        #expect(finished.status == 0, "stderr: \(finished.stderr)")
        #expect(finished.stderr.contains(prefix + "/share/botsi-restore/demo.csv"), "the shipped sample was used")
        #expect(
            finished.stderr.contains("demo: see every row with:  botsi-restore report --journal "), "\(finished.stderr)"
        )
        #expect(!finished.stderr.contains("swift run"))
    }
}

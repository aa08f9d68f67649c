import BotsiTestSupport
import Foundation
import Testing

/// cron/botsi-restore-nightly.{service,timer}, checked by systemd's own tools. The service names
/// /usr/bin/botsi-restore, which `systemd-analyze verify` insists exists: the copies checked here
/// name the built binary instead and are otherwise the shipped text.
@Suite("the systemd units")
struct SystemdUnitTests {
    static let analyze = "/usr/bin/systemd-analyze"
    static let service = "botsi-restore-nightly.service"
    static let timer = "botsi-restore-nightly.timer"

    /// The units' text, the binary's path replaced, in a workspace.
    func copies(_ workspace: Workspace) throws -> (service: String, timer: String) {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        var paths: [String] = []
        for name in [Self.service, Self.timer] {
            let text = try String(contentsOfFile: Locations.packageRoot + "/cron/" + name, encoding: .utf8)
            paths.append(workspace.write(name, text.replacingOccurrences(of: "/usr/bin/botsi-restore", with: binary)))
        }
        return (paths[0], paths[1])
    }

    func analyze(_ arguments: [String], in workspace: Workspace) throws -> Finished {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.analyze),
            "systemd-analyze is missing: apt-get install systemd")
        let finished = try Child(
            arguments, key: nil, in: workspace, environment: Child.environment(key: nil), executable: Self.analyze
        ).wait(timeout: 60)
        #expect(!finished.timedOut)
        return finished
    }

    /// `Key=value` lines of a unit, values by key in order.
    func settings(_ path: String) throws -> [String: [String]] {
        var settings: [String: [String]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
        }
        return settings
    }

    @Test func systemdAnalyzeVerifiesBothUnitsWithoutAWarning() throws {
        let workspace = Workspace()
        let units = try copies(workspace)
        // No man page on a build machine; the package installs botsi-restore(1).
        let verified = try analyze(["verify", "--man=no", units.service, units.timer], in: workspace)
        #expect(verified.status == 0, "stderr: \(verified.stderr)")
        #expect(verified.stderr.isEmpty && verified.stdout.isEmpty, "warnings: \(verified.stderr)\(verified.stdout)")
    }

    /// The optional drop-in that keeps last night's page: verified merged into the service, as
    /// systemd reads it, and naming the job's journal.
    @Test func theDropInThatKeepsLastNightsPageVerifiesInTheService() throws {
        let workspace = Workspace()
        let units = try copies(workspace)
        let binary = try #require(Locations.binary)
        let dropIn = try String(
            contentsOfFile: Locations.packageRoot + "/cron/botsi-restore-nightly-html-report.conf", encoding: .utf8)
        let service = try String(contentsOfFile: units.service, encoding: .utf8)
        let merged = service + "\n" + dropIn.replacingOccurrences(of: "/usr/bin/botsi-restore", with: binary)
        try merged.write(toFile: units.service, atomically: true, encoding: .utf8)
        let verified = try analyze(["verify", "--man=no", units.service, units.timer], in: workspace)
        #expect(verified.status == 0 && verified.stderr.isEmpty, "stderr: \(verified.stderr)")
        let post = try #require(try settings(units.service)["ExecStopPost"]?.first)
        let job = try String(contentsOfFile: Locations.packageRoot + "/jobs/nightly-reconcile.json", encoding: .utf8)
        #expect(job.contains("\"journal\": \"journals/nightly.sqlite\""))
        #expect(
            post.contains("report --journal journals/nightly.sqlite --format html --output /var/log/botsi-restore/"))
        #expect(try settings(units.service)["LogsDirectory"] == ["botsi-restore"])
    }

    @Test func theServiceIsSandboxedAsTheSecurityIssueAsks() throws {
        let workspace = Workspace()
        let units = try copies(workspace)
        // bookworm's systemd 252 rates the unit 1.2 of 10 ("OK"); the threshold is in tenths.
        let rated = try analyze(["security", "--offline=yes", "--threshold=15", units.service], in: workspace)
        #expect(rated.status == 0, "exposure above 1.5: \(rated.stdout.suffix(400))")

        let service = try settings(units.service)
        for (key, value) in [
            ("DynamicUser", "yes"), ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
            ("PrivateTmp", "yes"), ("PrivateDevices", "yes"), ("UMask", "0077"), ("CapabilityBoundingSet", ""),
            ("SuccessExitStatus", "75 143"),
        ] {
            #expect(service[key] == [value], "\(key)=\(value) expected, found \(service[key] ?? [])")
        }
        #expect(
            service["Environment"] == nil && service["EnvironmentFile"] == nil, "the key never goes in the environment")
    }

    @Test func theKeyFileIsTheCredentialSystemdLoads() throws {
        let workspace = Workspace()
        let service = try settings(try copies(workspace).service)
        let credential = try #require(service["LoadCredential"]?.first, "no LoadCredential=")
        let name = try #require(credential.split(separator: ":").first.map(String.init))
        #expect(credential == "\(name):/etc/botsi-restore/secret-key")
        let command = try #require(service["ExecStart"]?.first).split(separator: " ").map(String.init)
        let keyFile = try #require(command.firstIndex(of: "--key-file"), "ExecStart has no --key-file")
        #expect(command[keyFile + 1] == "${CREDENTIALS_DIRECTORY}/\(name)")
        #expect(command.contains("--job") && command.contains("run"))
        #expect(!command.contains("--key-env"))
        let timer = try settings(Locations.packageRoot + "/cron/" + Self.timer)
        #expect(timer["Unit"] == [Self.service])
        #expect(timer["OnCalendar"] == ["*-*-* 01:15:00"], "the crontab's 01:15")
    }
}

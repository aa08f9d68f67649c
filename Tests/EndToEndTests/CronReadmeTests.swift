import BotsiSimulator
import BotsiTestSupport
import Foundation
import Testing

/// The README's cron set-up, read from README.md (issue 19 items 9 and 14): the steps make every
/// folder the job uses, keep the reviewed jobs out of the job user's reach, name the binary for a
/// from-source install, read the journal as its owner, and the rehearsal's wrapper line runs.
@Suite("the README's cron set-up")
struct CronReadmeTests {
    /// The README's `## Cron` section up to the next `##` heading, and its `sh` blocks.
    static let section: String = {
        let readme = (try? String(contentsOfFile: Locations.packageRoot + "/README.md", encoding: .utf8)) ?? ""
        let start = readme.range(of: "\n## Cron\n").map(\.upperBound) ?? readme.endIndex
        let rest = readme[start...]
        let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
        return String(rest[..<end])
    }()
    static var blocks: [String] {
        section.components(separatedBy: "```sh\n").dropFirst().map { String($0.prefix { _ in true }) }
            .map { $0.components(separatedBy: "\n```").first ?? "" }
    }
    /// Logical lines: backslash continuations joined.
    static func commands(_ block: String) -> [String] {
        block.replacingOccurrences(of: "\\\n", with: " ").split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
    }

    @Test func theInstallStepsMakeTheExportsFolderAndKeepTheJobsRoots() throws {
        let install = try #require(Self.blocks.first { $0.contains("useradd") }, "no install block: \(Self.section)")
        let lines = Self.commands(install)
        let botsiDirectories = try #require(lines.first { $0.hasPrefix("install -d -o botsi ") })
        #expect(botsiDirectories.contains("/var/lib/botsi-restore/exports"), "\(botsiDirectories)")
        #expect(!botsiDirectories.contains("/etc/botsi-restore"), "the job user may not own its reviewed jobs")
        let jobs = try #require(lines.first { $0.hasPrefix("install -d ") && $0.contains("/etc/botsi-restore/jobs") })
        #expect(jobs.hasPrefix("install -d -m 0755 /etc/botsi-restore/jobs"), "\(jobs)")
        #expect(!jobs.contains("-o "), "root's, not the job user's: \(jobs)")
        // The job's input lives in the folder the steps make.
        let job = try String(contentsOfFile: Locations.packageRoot + "/jobs/nightly-reconcile.json", encoding: .utf8)
        #expect(job.contains("\"exports/"))
    }

    @Test func theCrontabShowsWhereToNameABinaryBuiltFromSource() throws {
        let crontab = try String(
            contentsOfFile: Locations.packageRoot + "/cron/botsi-restore.crontab", encoding: .utf8)
        let lines = crontab.split(separator: "\n")
        let example = try #require(lines.firstIndex { $0.hasPrefix("# BOTSI_RESTORE_BIN=/") }, "\(crontab)")
        let job = try #require(lines.firstIndex { $0.hasPrefix("15 1 * * * botsi ") })
        #expect(example < job, "an environment line must come before the job it applies to")
        #expect(Self.section.contains("uncomment\nthe crontab's `BOTSI_RESTORE_BIN=` line"))
    }

    @Test func theMorningAfterReadsTheJournalAsItsOwner() throws {
        let morning = try #require(Self.blocks.first { $0.contains("cron.log") && $0.contains("status") })
        for line in Self.commands(morning) where line.contains("botsi-restore ") {
            #expect(line.hasPrefix("runuser -u botsi -- botsi-restore "), "\(line)")
        }
        #expect(Self.section.contains("-wal") && Self.section.contains("-shm"), "the README says why")
    }

    /// The README's rehearsal: its wrapper line, options and input as written, run as a user that
    /// is not root, against the simulator; the rehearsal lands in its own journal. Then a second
    /// night, the same line after rows were added to the export: only the added rows are sent.
    @Test(.enabled(if: CronSetup.isRoot, "needs a second user"))
    func theRehearsalWrapperLineRunsAgainstTheSimulator() throws {
        let binary = try #require(Locations.binary, "botsi-restore is not built")
        let rehearsal = try #require(Self.blocks.first { $0.contains("botsi-restore simulate ") })
        let wrapperLine = try #require(Self.commands(rehearsal).first { $0.contains("botsi-restore-cron.sh") })
        let afterJob = try #require(wrapperLine.components(separatedBy: "nightly-reconcile.json ").last)
        let simulatorLine = try #require(Self.commands(rehearsal).first { $0.hasPrefix("botsi-restore simulate ") })
        // Without it the rehearsal would go to the job's real base URL: stop here.
        try #require(simulatorLine.contains("--port 8080") && afterJob.contains("--base-url http://127.0.0.1:8080"))
        let key = "rehearsal-key"
        #expect(simulatorLine.contains("--key \(key)") && rehearsal.contains("BOTSI_SECRET_KEY=\(key)"))
        let simulator = try startSimulator { $0.keys = [key] }
        defer { simulator.stop() }
        let options = afterJob.replacingOccurrences(of: "http://127.0.0.1:8080", with: simulator.baseURL)
            .split(separator: " ").map(String.init)
        let cron = CronSetup(env: "BOTSI_SECRET_KEY=\(key)\n", user: CronSetup.otherUser)
        let job = try String(contentsOfFile: Locations.packageRoot + "/jobs/nightly-reconcile.json", encoding: .utf8)
        cron.write("nightly.json", job, mode: 0o644)
        cron.makeDirectory("work/exports", mode: 0o700)
        cron.makeDirectory("work/journals", mode: 0o700)
        let demo = try String(contentsOfFile: Locations.packageRoot + "/samples/demo.csv", encoding: .utf8)
        cron.write("work/exports/rehearsal.csv", demo, mode: 0o644)
        cron.settings["BOTSI_RESTORE_BIN"] = binary
        let result = try cron.run(options)
        #expect([0, 75].contains(result.status), "stderr: \(result.stderr)\nlog: \(cron.log)")
        #expect(cron.log.contains("run finished in"), "\(cron.log)")
        #expect(FileManager.default.fileExists(atPath: cron.workdir + "/journals/rehearsal.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: cron.workdir + "/journals/nightly.sqlite"))
        let firstNight = simulator.stats().pairs
        #expect(firstNight.count > 0, "nothing reached the simulator")

        // The next day's export adds rows (the first-day issue: the wrapper twice, an export added in
        // between): the same line sends only those, and nothing the first night finished.
        let added = (0..<5).map { "cafe0000-0000-4000-8000-00000000000\($0),200099999999990\($0),added" }
        cron.write("work/exports/rehearsal.csv", demo + added.joined(separator: "\n") + "\n", mode: 0o644)
        let second = try cron.run(options)
        #expect([0, 75].contains(second.status), "stderr: \(second.stderr)\nlog: \(cron.log)")
        #expect(cron.log.components(separatedBy: "run finished in").count == 3, "two runs logged: \(cron.log)")
        let secondNight = simulator.stats().pairs
        let before = Dictionary(firstNight.map { ("\($0.profileId)/\($0.originalTransactionId)", $0) }) { a, _ in a }
        for pair in secondNight {
            let key = "\(pair.profileId)/\(pair.originalTransactionId)"
            if let earlier = before[key] {
                #expect(
                    pair.requests == earlier.requests,
                    "\(key), answered on the first night, was sent again on the second")
            } else {
                #expect(pair.profileId.hasPrefix("cafe0000-"), "\(key) is neither the first night's nor added")
            }
        }
        let addedSent = secondNight.filter { $0.profileId.hasPrefix("cafe0000-") }
        #expect(addedSent.count == added.count, "the added rows were sent: \(addedSent.map(\.profileId))")
    }
}

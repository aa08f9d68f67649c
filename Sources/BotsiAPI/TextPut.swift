internal import CCurl
import Foundation

/// One small HTTP PUT of a text body, for publishing (e.g. metrics to a Prometheus Pushgateway).
/// It sends no Authorization header: nothing of the key goes with it. It takes the route the tool
/// decides, as the restore requests do (`publishingRoute`): libcurl reads no proxy variable itself.
public enum TextPut {
    /// PUTs `body` to `url` within `timeout` seconds, by the route `proxy` and `environment` decide.
    /// Returns nil on a 2xx reply, else why it failed.
    public static func put(
        url: String, body: String, contentType: String, timeout: Double, proxy: ProxySetting,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        let route: ConnectionRoute
        do {
            route = try publishingRoute(url: url, setting: proxy, environment: environment)
        } catch {
            return error.message
        }
        guard curlGlobalInitCode == CURLE_OK else { return "libcurl could not start" }
        guard let easy = curl_easy_init() else { return "libcurl could not start (out of memory?)" }
        defer { curl_easy_cleanup(easy) }
        var pinned: UnsafeMutablePointer<curl_slist>?
        for entry in route.pinnedAddresses { pinned = curl_slist_append(pinned, entry) }
        defer { curl_slist_free_all(pinned) }
        if let (code, what) = applyRoute(route, pinned: pinned, to: easy) {
            return "libcurl refused \(what): \(String(cString: curl_easy_strerror(code)))"
        }
        var headers = curl_slist_append(nil, "Content-Type: \(contentType)")
        headers = curl_slist_append(headers, "Expect:")
        defer { curl_slist_free_all(headers) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }
        let bytes = Array(body.utf8)
        let milliseconds = Int(max(timeout, 0.001) * 1000)
        // The reply body is not needed; without a callback libcurl would print it on stdout.
        let discard: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
            _, size, count, _ in size * count
        }
        let setup: [CURLcode] = [
            ccurl_easy_setopt_string(easy, CURLOPT_URL, url),
            ccurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"),
            ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1),
            ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds),
            ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds),
            ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0),
            ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, "PUT"),
            ccurl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)),
            ccurl_easy_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, body),
            ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headers),
            ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer),
            ccurl_easy_setopt_write_callback(easy, discard),
        ]
        if let failed = setup.first(where: { $0 != CURLE_OK }) {
            return "libcurl refused an option: \(String(cString: curl_easy_strerror(failed)))"
        }
        let code = curl_easy_perform(easy)
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return (200..<300).contains(status) ? nil : "the server answered HTTP \(status)"
    }
}

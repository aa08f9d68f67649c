/// The page's one style block. The Content-Security-Policy allows it by its SHA-256 and nothing
/// else: no style attribute anywhere, so no `'unsafe-inline'`. Light and dark follow the reader's
/// `prefers-color-scheme` on screen (print is always light); print fits A4 and Letter (charts scale to the width, none is split).
enum HTMLStyle {
    static let css: StaticString = """
        :root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--panel:#f6f8fa;\
        --accent:#0969da;--warn:#9a6700;--k0:#4ac26b;--k1:#afb8c1;--k2:#d4a72c;--k3:#e5534b;--k4:#a371f7;\
        --k5:#fb8f44;--ink:#1f2328}
        @media screen and (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;\
        --panel:#151b23;--accent:#4493f8;--warn:#d29922;--k0:#2f9e52;--k1:#656c76;--k2:#b08800;--k3:#da3633;\
        --k4:#8957e5;--k5:#db6d28;--ink:#e6edf3}}
        *{box-sizing:border-box}
        body{margin:0 auto;max-width:1080px;padding:16px 24px 40px;background:var(--bg);color:var(--fg);\
        font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
        h1{font-size:1.5em;margin:.4em 0 .1em;overflow-wrap:anywhere}
        h2{font-size:1.25em;border-bottom:1px solid var(--line);padding-bottom:.2em;margin-top:1.6em}
        h3{font-size:1.05em;margin:1.2em 0 .4em}
        .sub,.note,footer,.words{color:var(--muted)}
        .headline{font-size:1.15em;font-weight:600;padding:.5em .8em;border-left:4px solid var(--accent);\
        background:var(--panel)}
        .headline.owed{border-left-color:var(--warn)}
        dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.8em 0}
        dl.facts dt{color:var(--muted)}
        dl.facts dd{margin:0;overflow-wrap:anywhere}
        table{border-collapse:collapse;margin:.4em 0 .8em;font-variant-numeric:tabular-nums}
        th,td{border-bottom:1px solid var(--line);padding:.2em .6em;text-align:left;vertical-align:top}
        thead th{border-bottom:2px solid var(--line)}
        td,th{overflow-wrap:anywhere}
        .num{text-align:right;white-space:nowrap}
        tr.zero{color:var(--muted)}
        tr.total th,tr.total td{font-weight:600;border-top:2px solid var(--line)}
        code,pre{font:13px/1.4 ui-monospace,"DejaVu Sans Mono",monospace}
        pre.command{background:var(--panel);border:1px solid var(--line);padding:.5em .7em;white-space:pre-wrap;\
        overflow-wrap:anywhere;margin:.3em 0 .8em}
        figure.chart{margin:1em 0 1.4em;padding:.6em;border:1px solid var(--line);break-inside:avoid}
        figcaption{font-weight:600;margin-bottom:.3em}
        svg.chart{display:block;width:100%;height:auto}
        svg.defs{position:absolute}
        .grid{stroke:var(--line);stroke-width:1}
        .axis{stroke:var(--muted);stroke-width:1}
        .tick,.value,.line-label{fill:var(--fg);font-size:11px}
        .axis-label{fill:var(--muted);font-size:11px}
        .empty-chart{fill:var(--muted);font-size:14px}
        .bar{stroke:var(--ink);stroke-width:.4}
        .k0{fill:var(--k0)}.k1{fill:var(--k1)}.k2{fill:var(--k2)}.k3{fill:var(--k3)}.k4{fill:var(--k4)}.k5{fill:var(--k5)}
        .hatch{stroke:var(--ink);stroke-width:1.1}
        .dot{fill:var(--ink)}
        polyline,line.l-p50,line.l-p90,line.l-p99,line.l-rate,line.l-limit,line.l-conc,line.l-option{fill:none;stroke-width:2}
        .l-p50{stroke:var(--k0)}
        .l-p90{stroke:var(--k5);stroke-dasharray:7 3}
        .l-p99{stroke:var(--k3);stroke-dasharray:2 3}
        .l-rate{stroke:var(--accent)}
        .l-limit{stroke:var(--k3);stroke-dasharray:7 3}
        .l-conc{stroke:var(--k4);stroke-dasharray:2 3}
        .l-option{stroke:var(--muted);stroke-dasharray:10 4 2 4}
        ul.legend{list-style:none;padding:0;margin:.3em 0;display:flex;flex-wrap:wrap;gap:.3em 1.2em;font-size:.9em}
        ul.legend li{display:flex;align-items:center;gap:.4em}
        details.data summary{cursor:pointer;color:var(--accent)}
        table.data{font-size:.85em}
        .examples{font-size:.9em;width:100%}
        .examples td:first-child,.examples code{white-space:nowrap;overflow-wrap:normal}
        footer{margin-top:2.5em;border-top:1px solid var(--line);padding-top:.6em;font-size:.85em}
        @media print{body{max-width:none;padding:0;font-size:10pt}\
        details.data{display:none}h2{break-after:avoid}h3{break-after:avoid}\
        table.statuses,dl.facts,figure.chart,pre.command{break-inside:avoid}}
        @page{margin:12mm}

        """
}

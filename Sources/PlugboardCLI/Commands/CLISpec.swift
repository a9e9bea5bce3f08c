import PlugboardAPI
import PlugboardFleet
import PlugboardHost
import PlugboardHTTP
import PlugboardServer

/// The command tree of `plugboard`: every command, option and argument with its help.
enum CLISpec {
    /// Where serve's defaults come from: the help shows the values the server uses, from
    /// one source (`ServerConfiguration`'s own defaults).
    static let serverDefaults = ServerConfiguration()

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static let globalOptions: [OptionSpec] = [
        .value("manifest", "PATH", help: "The manifest to read.", default: "$PLUGBOARD_MANIFEST, else ./plugins.json"),
        .value("env", "NAME", help: "The environment: testing, development, staging or production.",
               default: "$PLUGBOARD_ENV, else the manifest's environment, else development",
               completion: .choices(Environment.all.map(\.name))),
        .flag("json", help: "Print results, and errors, as JSON on standard output."),
        .value("log-level", "LEVEL", help: "Log lines at or above LEVEL to standard error: trace, debug, info, notice, warning, error or critical.",
               default: "warning", completion: .choices(Logger.Level.allCases.map(\.rawValue))),
        .value("log-format", "FORMAT", help: "How log lines are written: text (time, level, label, message, key=value) or json (one object per line with time, level, label, message and metadata).",
               default: "$PLUGBOARD_LOG_FORMAT, else text", completion: .choices(LogFormat.allCases.map(\.rawValue))),
        .value("cache-dir", "PATH", help: "Where content-addressed plugin copies are kept.",
               default: "$XDG_CACHE_HOME/plugboard, else ~/.cache/plugboard", completion: .directory),
        .flag("version", help: "Print the version and exit."),
    ]

    /// `fleet set` and `fleet rollout`: the hosts' preflight alone judges the manifest.
    static let noPreflightOption = OptionSpec.flag("no-preflight", help: "Write the manifest without its preflight here (for one only the hosts can run: their products, variables or backends); each host still checks it before it loads it.")

    /// `--fleet`, which every fleet command needs.
    static let fleetOption = OptionSpec.value("fleet", "URL", help: "The fleet: etcd://HOST:PORT[,HOST:PORT...]/PREFIX.")

    static let root = CommandSpec(
        name: "plugboard",
        abstract: "Load plugins from a manifest into one dependency-injection container, and use them.",
        discussion: """
            Global options may be given before or after the subcommand.

            Exit status: 0 on success; 1 when the operation failed (a required plugin failed \
            or was rejected, check found a plugin that did not load, no ObjectStorage is \
            bound, a storage operation failed); 2 for bad usage, a missing or invalid \
            manifest, or a missing ${VAR} in a selected plugin's config.
            """,
        options: globalOptions,
        subcommands: [
            CommandSpec(name: "check", abstract: "Validate the manifest and load every selected plugin; report each one.",
                        discussion: "Each plugin is loaded in a preflight child process (plugboard preflight), so one that crashes, hangs or exits is reported by name with the signal, status or timeout: registration, every singleton built once, managed services started and stopped, health checks. Warns (loader.newer_build_beside) when a newer build of a plugin's file sits in the same SwiftPM build folder, such as .build/debug after swift test beside the .build/release file the manifest names. Exits 1 if any selected plugin failed or was rejected.",
                        options: [.flag("in-process", help: "Load the plugins in this process instead of a preflight child.")]),
            CommandSpec(name: "plugins", abstract: "List the manifest's plugins and their states.",
                        discussion: "Exits 1 if a required plugin is not active."),
            CommandSpec(name: "services", abstract: "List every service registration after loading the plugins.",
                        discussion: "Exits 1 if a required plugin is not active."),
            CommandSpec(name: "inspect", abstract: "Show what a plugin file declares.",
                        discussion: "Reads the ELF and plugin headers; unless --no-load is given, also loads the file to ask its name, version and services (it registers nothing).",
                        options: [.flag("no-load", help: "Read the file only; never dlopen it.")],
                        arguments: [ArgumentSpec(name: "FILE", help: "The plugin's .so file.", optional: false)],
                        globals: ["json", "log-level", "log-format", "cache-dir", "version"]),
            CommandSpec(name: "keygen", abstract: "Make an Ed25519 key pair for signing plugins.",
                        discussion: "Writes the private key to PATH (PEM PKCS#8, mode 0600) and the public key to PATH.pub (PEM), as OpenSSL reads and writes them; refuses to overwrite either. Prints the key id and the entry to add to the manifest's trust keys (docs/SECURITY.md). With --json: {\"keyId\", \"privateKey\", \"publicKey\", \"trustKey\": {\"name\", \"ed25519\"}}.",
                        options: [
                            .value("out", "PATH", help: "Where to write the private key; the public key goes to PATH.pub.", completion: .file),
                            .value("name", "NAME", help: "The key's name in the manifest's trust keys.", default: "PATH's file name up to its first dot"),
                        ],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "sign", abstract: "Sign a plugin file for its manifest entry.",
                        discussion: "Signs the plugin's name and its file's SHA-256 with an Ed25519 private key (docs/SECURITY.md has the exact bytes) and prints the \"sha256\" and \"signature\" to add to the plugin's entry. The file is read, never loaded. A key file others can read is refused (chmod 600 it). With --json: {\"name\", \"sha256\", \"signature\", \"keyId\"}.",
                        options: [
                            .value("key", "KEY", help: "The private key file (plugboard keygen, or openssl genpkey -algorithm ed25519).", completion: .file),
                            .value("name", "NAME", help: "The plugin's name in the manifest, which the signature covers.", default: "the file's name without lib and .so"),
                        ],
                        arguments: [ArgumentSpec(name: "FILE", help: "The plugin's .so file.", optional: false)],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "graph", abstract: "Show plugins, their services and who requires whom.",
                        discussion: "Exits 1 if a required plugin is not active.",
                        options: [.value("format", "FORMAT", help: "The output format: dot (Graphviz) or json.", default: "dot",
                                         completion: .choices(GraphCommand.formats))]),
            CommandSpec(name: "storage", abstract: "Use the ObjectStorage the manifest binds (the highest-ranked one).",
                        discussion: "With --json, each command prints JSON objects instead of text.",
                        subcommands: [
                            CommandSpec(name: "put", abstract: "Store an object.",
                                        options: [
                                            .value("content-type", "TYPE", help: "The object's content type.", default: "application/octet-stream"),
                                            .value("meta", "KEY=VALUE", help: "A metadata entry; may be repeated.", repeatable: true),
                                        ],
                                        arguments: [ArgumentSpec(name: "KEY", help: "The object's key.", optional: false),
                                                    ArgumentSpec(name: "FILE", help: "The file to store, or - for standard input (the default).", optional: true)]),
                            CommandSpec(name: "get", abstract: "Write an object's content to standard output or a file.",
                                        discussion: "Exits 1 if there is no object under KEY. With --json, prints the object's information, with the content in base64 as \"data\" (or the file written as \"output\").",
                                        options: [.value("output", short: "o", "FILE", help: "Write to FILE instead of standard output (- is standard output).")],
                                        arguments: [ArgumentSpec(name: "KEY", help: "The object's key.", optional: false)]),
                            CommandSpec(name: "head", abstract: "Show an object's size, ETag, content type, last-modified time and metadata.",
                                        discussion: "Prints one \"name: value\" line each, then one \"meta-<key>: <value>\" line per metadata entry. Exits 1 if there is no object under KEY.",
                                        arguments: [ArgumentSpec(name: "KEY", help: "The object's key.", optional: false)]),
                            CommandSpec(name: "delete", abstract: "Delete an object; deleting a missing key succeeds.",
                                        arguments: [ArgumentSpec(name: "KEY", help: "The object's key.", optional: false)]),
                            CommandSpec(name: "list", abstract: "List keys, one per line.",
                                        arguments: [ArgumentSpec(name: "PREFIX", help: "Only keys that start with PREFIX.", optional: true)]),
                        ]),
            CommandSpec(name: "serve", abstract: "Serve the bound ObjectStorage over HTTP until SIGTERM or SIGINT.",
                        discussion: "Endpoints: PUT, GET, HEAD and DELETE /v1/objects/{key}; GET /v1/objects?prefix=&limit=&cursor=; GET /healthz, /readyz, /metrics; GET /v1/admin/plugins, /v1/admin/services and /v1/admin/events, POST /v1/admin/reload (docs/openapi.yaml). Object answers carry X-Plugboard-Generation. With hot swap on (the manifest's hotSwap.enabled, or --watch), a change to the manifest or a plugin file, SIGHUP, POST /v1/admin/reload or plugboard reload reloads the manifest while serving; with it off, SIGHUP is logged and ignored. Once listening, prints one line to standard output: plugboard serve: listening on http://HOST:PORT (with --json, {\"listening\":\"http://HOST:PORT\"}). PLUGBOARD_API_TOKEN, when set, guards /v1/objects; PLUGBOARD_ADMIN_TOKEN guards /v1/admin (Authorization: Bearer TOKEN). A non-loopback --listen without PLUGBOARD_ADMIN_TOKEN is refused (exit 2). On SIGTERM or SIGINT it stops accepting, lets requests in flight finish, stops the plugins' services and exits 0. Access log lines are written at --log-level info.",
                        options: [
                            .value("listen", "HOST:PORT", help: "The address to listen on; port 0 picks a free port.", default: ListenAddress.defaultText),
                            .value("shutdown-timeout", "SECONDS", help: "How long requests in flight may take to finish after SIGTERM or SIGINT.", default: seconds(ServeCommand.defaultShutdownTimeoutSeconds)),
                            .value("max-body-bytes", "BYTES", help: "The largest request body accepted (413 beyond); bodies stream to the storage.", default: String(serverDefaults.limits.maxBodyBytes)),
                            .value("max-connections", "N", help: "Open connections at most (503 beyond); an idle one costs a few KiB.", default: String(serverDefaults.maxConnections)),
                            .value("max-connections-per-client", "N", help: "Open connections from one client address at most (503 beyond).", default: String(serverDefaults.maxConnectionsPerClient)),
                            .value("event-loops", "N", help: "Event-loop threads serving the connections.", default: "the number of cores"),
                            .value("max-buffered-bytes", "BYTES", help: "Body bytes held in memory at once, all connections together; beyond, new bodies get 503 with Retry-After and bodies in progress wait.", default: String(serverDefaults.maxBufferedBytes)),
                            .value("handler-start", "at-once|immediate|pool", help: "How a request is handled: a read the storage has at once is answered on its event loop without a task, others as a task started there (at-once); every request as a task started on its event loop's thread (immediate), or on Swift's cooperative pool (pool).", default: "at-once",
                                   completion: .choices(ServeCommand.handlerStarts)),
                            .value("first-byte-timeout", "SECONDS", help: "How long a new connection may wait before its first byte.", default: seconds(serverDefaults.firstByteTimeoutSeconds)),
                            .value("idle-timeout", "SECONDS", help: "How long a kept-alive connection may wait for its next request.", default: seconds(serverDefaults.idleTimeoutSeconds)),
                            .value("request-timeout", "SECONDS", help: "How long a request head may take to arrive, and the longest pause inside a body (408 beyond).", default: seconds(serverDefaults.headerTimeoutSeconds)),
                            .value("s3-listen", "HOST:PORT", help: "Also serve the S3 API (docs/S3_API.md) on this address, over the same storage; needs a key pair from the manifest's \"s3\" or PLUGBOARD_S3_ACCESS_KEY_ID and PLUGBOARD_S3_SECRET_ACCESS_KEY."),
                            .value("s3-region", "REGION", help: "The region the S3 API answers and expects in signatures.", default: "us-east-1"),
                            .value("s3-domain", "DOMAIN", help: "Accept virtual-hosted S3 requests: Host BUCKET.DOMAIN names the bucket (path style works either way)."),
                            .flag("watch", help: "Hot swap on for this run, watching the manifest and plugin files, whatever hotSwap.enabled says (refused in production without hotSwap.allowInProduction)."),
                            .flag("no-watch", help: "Do not watch files; SIGHUP, POST /v1/admin/reload and plugboard reload still reload when hot swap is on."),
                            .value("fleet", "URL", help: "Run as a host of the fleet etcd://HOST:PORT[,HOST:PORT...]/PREFIX: the manifest comes from etcd (the host's target, else the stable one), each new one is a hot-swap reload, and the host reports its status under PREFIX/hosts/ID (docs/FLEET.md). Excludes --manifest, --watch and --no-watch."),
                            .value("host-id", "ID", help: "The host's id in the fleet: letters, digits, dots, dashes, underscores and colons.", default: "HOSTNAME:PORT of --listen"),
                            .value("fleet-state", "PATH", help: "Where a fleet host keeps the manifest it runs and the last one that applied, to start from while etcd is down.",
                                   default: "CACHE-DIR/fleet/ID", completion: .directory),
                        ]),
            CommandSpec(name: "fleet", abstract: "Run a fleet of hosts that serve from etcd: status, the stable manifest, rollouts in waves.",
                        discussion: "FLEET is etcd://HOST:PORT[,HOST:PORT...]/PREFIX; docs/FLEET.md describes the keys under PREFIX. Exit status: 0 on success, 1 when the operation failed (etcd unreachable, a rollout refused or rolled back), 2 for bad usage, an invalid URL or --waves, or a manifest that does not parse.",
                        subcommands: [
                            CommandSpec(name: "status", abstract: "Show the stable manifest, every live host and the current or last rollout.",
                                        discussion: "One line per live host: id, address, manifest digest, generation, readiness, the last reload's outcome, 5xx answers over object requests since that reload, and whether it lags (runs another manifest than its desired one, or sits on the target of a rollout no controller runs) or refused its desired one; then hosts that are gone mid-rollout, the rollout (marked orphaned when it has not ended and no controller holds its lock), and every record that does not read (bad record: KEY: CODE: MESSAGE), which is left out rather than failing the command. With --json: {\"stable\", \"hosts\": [...], \"gone\", \"rollout\", \"rolloutOrphaned\", \"badRecords\": [{\"key\", \"error\"}]}.",
                                        options: [fleetOption],
                                        globals: ["json", "log-level", "log-format", "version"]),
                            CommandSpec(name: "set", abstract: "Make MANIFEST the stable manifest every host runs, without waves.",
                                        discussion: "Runs MANIFEST's preflight here first, as a host's reload would (every selected plugin staged and tried in a preflight child, told it is only checked; products are found beside this plugboard or in PLUGBOARD_PLUGIN_PATH, in the environment of --env, else the manifest's): a manifest a host would refuse is refused (fleet.preflight_refused, exit 1) and nothing is written. Then stores it under PREFIX/manifests/SHA256 and points PREFIX/stable at it; every host reloads to it. Refused while a rollout runs (fleet.rollout_in_progress names it), and while hosts sit on the targets of a rollout whose controller is gone (fleet.rollout_orphaned: end it with fleet rollout --abort).",
                                        options: [fleetOption, noPreflightOption],
                                        arguments: [ArgumentSpec(name: "MANIFEST", help: "The manifest file; in a fleet, plugins are products, absolute paths or remote sources.", optional: false)],
                                        globals: ["env", "cache-dir", "json", "log-level", "log-format", "version"]),
                            CommandSpec(name: "rollout", abstract: "Roll MANIFEST out in waves, rolling every host back by itself if one wave fails.",
                                        discussion: "Hosts live at the start are taken sorted by id; each wave is a cumulative count or percentage of them (rounded up), and a last wave of every host left is implied. First MANIFEST's preflight runs here, as for fleet set (nothing is written when it is refused). For each wave the hosts' targets point at MANIFEST; once each host of the wave reports it applied and ready, the wave bakes for --bake seconds with its error rate (5xx over object requests since the reload) at most --max-error-rate; then the next wave, and at the end MANIFEST becomes stable. A refusal, a wave that takes longer than --wave-timeout, a lost host or an error rate over the bound sends every host reached back to the previous manifest, and exits 1 naming the host and what failed. One rollout at a time: a second is refused, naming the first. Hosts that join during a rollout run the stable manifest until it ends. Progress goes to standard output (standard error with --json, whose report is the rollout's record).",
                                        options: [
                                            fleetOption,
                                            .value("waves", "LIST", help: "The waves: cumulative host counts and percentages, comma-separated.", default: WavePlan.defaultText),
                                            .value("bake", "SECONDS", help: "How long each wave runs under watch before the next.", default: seconds(FleetCommand.defaultBakeSeconds)),
                                            .value("max-error-rate", "FRACTION", help: "The highest share of a wave's object requests that may fail with 5xx while it bakes.",
                                                   default: String(FleetCommand.defaultMaxErrorRate)),
                                            .value("wave-timeout", "SECONDS", help: "How long a wave's hosts have to apply the manifest and be ready (and, in a rollback, to return).",
                                                   default: seconds(FleetCommand.defaultWaveTimeoutSeconds)),
                                            .flag("abort", help: "Stop the running rollout instead: its hosts go back to the previous manifest."),
                                            noPreflightOption,
                                        ],
                                        arguments: [ArgumentSpec(name: "MANIFEST", help: "The manifest to roll out (not with --abort).", optional: true)],
                                        globals: ["env", "cache-dir", "json", "log-level", "log-format", "version"]),
                        ],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "reload", abstract: "Ask a running plugboard serve to reload its manifest, and print the outcome.",
                        discussion: "Sends POST /v1/admin/reload with PLUGBOARD_ADMIN_TOKEN as the bearer token and waits for the outcome. Exits 0 when the reload was applied or nothing had changed, 1 when it was refused (the running generation keeps serving) or the server cannot be reached, 2 for bad usage.",
                        options: [.value("url", "URL", help: "The server's address.", default: "http://127.0.0.1:8080")],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "publish", abstract: "Put a built plugin in an S3 store by its digest, and print the manifest entry that loads it.",
                        discussion: "Checks FILE as the loader would (permissions, ELF, plugin header, toolchain), hashes it and puts it at PREFIX/NAME/SHA256.so with its header facts as x-amz-meta-plugboard-* metadata; an object of that key and size already there is left as it is (HEAD). Prints the entry to paste into plugins.json: {\"name\": ..., \"source\": \"s3://BUCKET/PREFIX/NAME/SHA256.so\", \"sha256\": ...} (with --json, {\"entry\": {...}, \"uploaded\": BOOL, \"size\": N}). The store is reached as a host reaches it: AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) for the endpoint, over http, AWS_REGION, and the AWS credentials from the environment or the shared credentials file (AWS_PROFILE). Exits 0 when the entry is printed, 1 when the file or the store refused, 2 for bad usage.",
                        options: [.value("name", "NAME", help: "The plugin's name in the manifest and in the key.", default: "the file's name without lib and .so")],
                        arguments: [ArgumentSpec(name: "FILE", help: "The plugin's .so file.", optional: false),
                                    ArgumentSpec(name: "DESTINATION", help: "s3://BUCKET/PREFIX/, where the plugin goes.", optional: false)],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "preflight", abstract: "Internal: the child process in which the host tries plugins before it maps them.",
                        discussion: "Run by plugboard serve (hot swap) and plugboard check, with a request on descriptor 3 and the report on descriptor 4. Not for people to run.",
                        options: [.value("parent-pid", "PID", help: "The host's process id; the child exits if its parent is not that process.")]),
            CommandSpec(name: "worker", abstract: "Internal: the child process in which an isolated plugin runs.",
                        discussion: "Run by plugboard serve for a plugin whose manifest entry says \"isolation\": \"process\": it maps the plugin the host staged, registers and starts it, and serves the host's calls over the descriptors it was given (3 and up). Not for people to run.",
                        options: [.value("parent-pid", "PID", help: "The host's process id; the child exits if its parent is not that process."),
                                  .value("transport", "KIND", help: "The wire's transport: socket or ring."),
                                  .value("descriptors", "COUNT", help: "How many descriptors the wire uses, from 3 up.")]),
            CommandSpec(name: "new-plugin", abstract: "Write a SwiftPM package for a new plugin, ready to build and test.",
                        discussion: "Writes Package.swift (building libNAME.so against this checkout's PlugboardAPI), the plugin's source with its header and entry point, an in-memory ObjectStorage to start from (with --layer, a layer forwarding every requirement to the storage below), tests (the conformance suite and a check that the host accepts the built file's plugin header), plugins.snippet.json and README.md. The checkout is found above the plugboard executable unless --sdk is given. Exits 2 for an invalid NAME or a --dir that is not empty, 1 if no checkout is found.",
                        options: [
                            .value("dir", "PATH", help: "The folder to create the package in; must not exist or be empty.", default: "./NAME",
                                   completion: .directory),
                            .value("service", "SERVICE", help: "The service the plugin provides.", default: "ObjectStorage"),
                            .flag("layer", help: "Write a layer over the ObjectStorage of the plugin its manifest entry names in \"wraps\", forwarding every requirement, with tests that load it over MemoryStorage."),
                            .value("sdk", "PATH", help: "The Plugboard checkout to build against.", default: "the checkout the executable was built in",
                                   completion: .directory),
                        ],
                        arguments: [ArgumentSpec(name: "NAME", help: "The plugin's name, a Swift identifier such as AcmeStorage.", optional: false)],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "new-contract", abstract: "Write a contract package for a service protocol of your own, with a provider and a consumer.",
                        discussion: "Writes NAMEContract/ (a dynamic library holding only the NAME protocol, which every plugin providing or using the service imports, so that all of them share one type), NAMEPlugins/ (NAMEProvider, registering an any NAME, and NAMEConsumer, resolving it, with a test that loads both into one container), plugins.snippet.json and README.md. Every dependency is an absolute path, so the packages build where they are written. The checkout is found above the plugboard executable unless --sdk is given. Exits 2 for an invalid NAME or a --dir that is not empty, 1 if no checkout is found.",
                        options: [
                            .value("dir", "PATH", help: "The folder to create the packages in; must not exist or be empty.", default: "./NAME",
                                   completion: .directory),
                            .value("sdk", "PATH", help: "The Plugboard checkout to build against.", default: "the checkout the executable was built in",
                                   completion: .directory),
                        ],
                        arguments: [ArgumentSpec(name: "NAME", help: "The protocol's name, a Swift identifier such as Greeter.", optional: false)],
                        globals: ["json", "log-level", "log-format", "version"]),
            CommandSpec(name: "completion", abstract: "Print a completion script for bash, zsh or fish.",
                        discussion: "The script completes commands, options, the values of options that take one of a few words, and file names where a path is expected. bash: source <(plugboard completion bash), or save it as ~/.local/share/bash-completion/completions/plugboard. zsh: save it as _plugboard in a folder of $fpath. fish: save it as ~/.config/fish/completions/plugboard.fish.",
                        arguments: [ArgumentSpec(name: "SHELL", help: "bash, zsh or fish.", optional: false,
                                                 completion: .choices(CompletionScript.Shell.allCases.map(\.rawValue)))],
                        globals: []),
            CommandSpec(name: "version", abstract: "Print the versions of plugboard, its PlugboardAPI and the plugin ABI (as --version does).",
                        globals: ["json"]),
        ])
}

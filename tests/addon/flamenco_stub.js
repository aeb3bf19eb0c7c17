// A stub of Flamenco Manager's job-compiler API, to run a job type's compileJob in Node.js:
//   node flamenco_stub.js JOB_TYPE.js SETTINGS.json   -> {"job_type", "tasks"} as JSON
// Like the Manager it fills in the settings' defaults and refuses missing required ones, and
// it checks what the Manager would reject: unknown commands or parameter types, a dependency
// on a task that was never added, a task added twice.
"use strict";
const fs = require("fs");
const vm = require("vm");
const posix = require("path").posix;

const COMMANDS = {  // Flamenco Worker commands and their parameter types
    "blender-render": { exe: "string", exeArgs: "string", argsBefore: "strings",
                        blendfile: "string", args: "strings" },
    "exec": { exe: "string", args: "strings" },
    "echo": { message: "string" },
    "sleep": { duration_in_seconds: "number" },
};
const SETTING_TYPES = { string: "string", int32: "number", float: "number", bool: "boolean" };

function fail(msg) {
    process.stdout.write(JSON.stringify({ error: String(msg) }) + "\n");
    process.exit(3);
}

function checkParam(cmd, key, value) {
    const want = COMMANDS[cmd][key];
    if (want === undefined) fail(`command ${cmd}: unknown parameter ${key}`);
    const ok = want === "strings" ? Array.isArray(value) && value.every((v) => typeof v === "string")
        : typeof value === want;
    if (!ok) fail(`command ${cmd}: parameter ${key} must be ${want}, got ${JSON.stringify(value)}`);
}

const added = [];
const author = {
    Task(name, type) {
        if (typeof name !== "string" || typeof type !== "string") fail("Task(name, type): strings");
        return {
            name, type, commands: [], deps: [],
            addCommand(c) { this.commands.push(c); },
            addDependency(t) {
                if (!t || typeof t.name !== "string") fail(`${name}: dependency is not a task`);
                this.deps.push(t);
            },
        };
    },
    Command(cmd, params) {
        if (!(cmd in COMMANDS)) fail(`unknown command ${cmd}`);
        for (const [k, v] of Object.entries(params)) checkParam(cmd, k, v);
        return { name: cmd, parameters: params };
    },
};
const path = {
    join: (...a) => posix.join(...a),
    dirname: (p) => posix.dirname(p),
    basename: (p) => posix.basename(p),
    stem: (p) => posix.basename(p, posix.extname(p)),
};

const [script, settingsFile] = process.argv.slice(2);
const ctx = vm.createContext({ author, path, print: (...a) => console.error(...a) });
vm.runInContext(fs.readFileSync(script, "utf8") + "\n;globalThis.__JOB_TYPE = JOB_TYPE;", ctx,
                { filename: script });
const jobType = ctx.__JOB_TYPE;
const given = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
const settings = {};
for (const s of jobType.settings) {
    if (!(s.type in SETTING_TYPES)) fail(`setting ${s.key}: unknown type ${s.type}`);
    if (s.key in settings) fail(`setting ${s.key} twice`);
    const v = s.key in given ? given[s.key] : s.default;
    if (v === undefined) {
        if (s.required) fail(`setting ${s.key} is required`);
        continue;
    }
    if (typeof v !== SETTING_TYPES[s.type]) fail(`setting ${s.key}: expected ${s.type}`);
    settings[s.key] = v;
}
const job = {
    settings,
    addTask(t) {
        if (added.includes(t)) fail(`task ${t.name} added twice`);
        added.push(t);
    },
};
try {
    ctx.compileJob(job);
} catch (e) {
    fail(e);
}
for (const t of added) {
    for (const d of t.deps) {
        if (!added.includes(d)) fail(`${t.name} depends on ${d.name}, which is not in the job`);
    }
}
process.stdout.write(JSON.stringify({
    job_type: jobType,
    tasks: added.map((t) => ({ name: t.name, type: t.type, commands: t.commands,
                               dependencies: t.deps.map((d) => d.name) })),
}) + "\n");

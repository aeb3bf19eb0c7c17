// Flamenco job type: a Hullabaloo wedge (variations of a rigid-body simulation) on a farm.
//
// Install: copy this file into the `scripts/` folder next to the Flamenco Manager executable
// and restart the Manager; the job type "Hullabaloo Wedge" then appears in the Blender add-on.
//
// One bake task per variant (the same `hullabaloo bake ... --set ... --seed K` command a user
// would type to bake it alone), one render task per variant depending on its bake (its
// labelled last frame, `hullabaloo preview`), and one contact-sheet task depending on all of
// them (`hullabaloo wedge ... --collect`: wedge.json and contact_sheet.png). Variant names and
// arguments follow addon/wedge_plan.py exactly (tests/addon/test_flamenco_job.py checks it).

const JOB_TYPE = {
    label: "Hullabaloo Wedge",
    description: "Bake every combination of some Hullabaloo settings (times some random " +
        "seeds), render a still of each and a contact sheet.",
    settings: [
        { key: "blender_cmd", type: "string", default: "{blender}", visible: false },
        { key: "blender_args", type: "string", default: "{blenderargs}", visible: false },
        { key: "filepath", type: "string", subtype: "file_path", required: true,
          description: "The .blend file to vary" },
        { key: "output_dir", type: "string", subtype: "dir_path", required: true,
          description: "Folder of the wedge: one sub-folder per variant, wedge.json, " +
            "contact_sheet.png" },
        { key: "variations", type: "string", required: true,
          description: "PATH=V1,V2,... e.g. Ball.hullabaloo.mass=1,5; several separated by " +
            "';' (commas inside brackets belong to a value)" },
        { key: "seeds", type: "int32", default: 0,
          description: "Bake each combination with seeds 0..K-1 (start-pose jitter); 0: no seed" },
        { key: "jitter", type: "float", default: 0.005,
          description: "Start-pose jitter of the seeds, in metres" },
        { key: "import_rigid_body", type: "bool", default: false,
          description: "Copy Blender's Rigid Body settings and constraints to Hullabaloo " +
            "before each bake (Import Blender Rigid Body), for files set up with Blender's " +
            "Rigid Body only" },
        { key: "extra_sets", type: "string", default: "",
          description: "PATH=VALUE overrides applied to every variant first, ';'-separated" },
        { key: "frame_start", type: "int32", default: 0,
          description: "First frame of the bake; with frame_end 0 or less: the file's range" },
        { key: "frame_end", type: "int32", default: 0, description: "Last frame of the bake" },
        { key: "size", type: "string", default: "320x180", description: "Still size WxH" },
        { key: "preview", type: "int32", default: 0,
          description: "Preview frames per variant besides its last-frame still" },
    ]
};

function compileJob(job) {
    const s = job.settings;
    const varies = splitList(s.variations, ";").map(parseVary);
    const seeds = s.seeds > 0 ? s.seeds : null;
    const variants = planVariants(varies, seeds);
    const common = commonArgs(s);

    const bakes = [];
    const renders = [];
    for (const v of variants) {
        const dir = path.join(s.output_dir, v.name);
        const bake = author.Task(`bake-${v.name}`, "blender");
        bake.addCommand(hullabaloo(s, "bake", s.filepath,
            ["--out", dir].concat(common, ["--no-render"], setArgs(v.sets), seedArgs(v.seed),
                                  ["--label", v.label])));
        job.addTask(bake);
        bakes.push(bake);

        const render = author.Task(`render-${v.name}`, "blender");
        render.addCommand(hullabaloo(s, "preview", path.join(dir, "baked.blend"),
            ["--out", dir, "--preview", String(s.preview), "--size", s.size,
             "--label", v.label]));
        render.addDependency(bake);
        job.addTask(render);
        renders.push(render);
    }

    const sheet = author.Task("contact-sheet", "blender");
    let wedgeArgs = ["--out", s.output_dir];
    for (const [p, values] of varies) {
        wedgeArgs.push("--vary", `${p}=${values.join(",")}`);
    }
    if (seeds !== null) {
        wedgeArgs.push("--seeds", String(seeds));
    }
    sheet.addCommand(hullabaloo(s, "wedge", s.filepath,
        wedgeArgs.concat(common, ["--collect"])));
    for (const t of bakes.concat(renders)) {
        sheet.addDependency(t);
    }
    job.addTask(sheet);
}

// `blender -b --command hullabaloo SUB FILE ARGS...` through Flamenco's blender-render
// command, which builds `{exe} {exeArgs} {argsBefore} {blendfile} {args}`.
function hullabaloo(s, sub, blendfile, args) {
    return author.Command("blender-render", {
        exe: s.blender_cmd,
        exeArgs: s.blender_args,
        argsBefore: ["--command", "hullabaloo", sub],
        blendfile: blendfile,
        args: args,
    });
}

// The bake options every variant shares (the order of addon/cli.py common_bake_args; bake
// tasks add --no-render after them: the render tasks render).
function commonArgs(s) {
    let out = s.import_rigid_body ? ["--import-rigid-body"] : [];
    if (s.frame_end > 0) {
        out.push("--frame-start", String(s.frame_start), "--frame-end", String(s.frame_end));
    }
    out = out.concat(setArgs(splitList(s.extra_sets || "", ";")));
    out.push("--jitter", pyFloat(s.jitter), "--preview", "0", "--size", s.size);
    return out;
}

function setArgs(sets) {
    let out = [];
    for (const a of sets) {
        out.push("--set", a);
    }
    return out;
}

function seedArgs(seed) {
    return seed === null ? [] : ["--seed", String(seed)];
}

// Python's repr of a float: 0.005 -> "0.005", 1 -> "1.0".
function pyFloat(x) {
    const t = String(Number(x));
    return /[.eE]|Infinity|NaN/.test(t) ? t : t + ".0";
}

function splitList(text, sep) {
    return text.split(sep).map((t) => t.trim()).filter((t) => t.length > 0);
}

function parseVary(spec) {
    const eq = spec.indexOf("=");
    const p = eq < 0 ? "" : spec.slice(0, eq).trim();
    if (eq < 0 || !p) {
        throw `variation "${spec}": expected PATH=V1,V2,...`;
    }
    if (p.lastIndexOf(".hullabaloo.") <= 0) {
        throw `variation "${spec}": write OBJECT.hullabaloo.PROPERTY or Scene.hullabaloo.PROPERTY`;
    }
    const text = spec.slice(eq + 1).trim();
    if (!text) {
        throw `variation "${spec}": no values; write PATH=V1,V2,...`;
    }
    return [p, splitValues(text)];
}

// Split at the commas outside brackets, so "(8,0,0),(12,0,0)" is two values.
function splitValues(text) {
    const items = [];
    let depth = 0;
    let cur = "";
    for (const ch of text) {
        if ("([{".includes(ch)) depth += 1;
        else if (")]}".includes(ch)) depth -= 1;
        if (ch === "," && depth === 0) {
            items.push(cur.trim());
            cur = "";
        } else {
            cur += ch;
        }
    }
    items.push(cur.trim());
    if (depth !== 0) throw `"${text}": unbalanced brackets`;
    if (items.some((i) => !i)) throw `"${text}": empty value in the list`;
    return items;
}

function slug(text) {
    const t = text.replace(/[^A-Za-z0-9.+-]+/g, "_").replace(/^_+|_+$/g, "");
    return t || "x";
}

function propName(p) {
    return p.slice(p.lastIndexOf(".") + 1);
}

function pad3(i) {
    return String(i).padStart(3, "0");
}

// The cartesian product of the values in the order given, seeds innermost.
function planVariants(varies, seeds) {
    let combos = [[]];
    for (const [p, values] of varies) {
        const next = [];
        for (const c of combos) {
            for (const v of values) next.push(c.concat([[p, v]]));
        }
        combos = next;
    }
    const seedList = seeds === null ? [null] : [...Array(seeds).keys()];
    const out = [];
    for (const pairs of combos) {
        for (const seed of seedList) {
            const i = out.length;
            const name = [`v${pad3(i)}`].concat(pairs.map(([p, v]) => `${propName(p)}-${slug(v)}`),
                seed === null ? [] : [`seed${seed}`]).join("_");
            const label = [`v${pad3(i)}`].concat(pairs.map(([p, v]) => `${propName(p)}=${v}`),
                seed === null ? [] : [`seed ${seed}`]).join(" ");
            out.push({ name: name, label: label, seed: seed, sets: pairs.map(([p, v]) => `${p}=${v}`) });
        }
    }
    return out;
}

// The replay page's script (hil/assets/replay/replay.js, inlined by `hil run` into replay.html):
// draws the run's data (the JSON in #replay-data, written by hil/src/replay/chain.rs or
// humanoid.rs) with three.js. When its first frame is drawn, #status gets data-state="ready";
// any error shows in #status (data-state="error") and in the title.
(function () {
  'use strict';
  const statusEl = document.getElementById('status');
  function fail(message) {
    document.title = 'replay error: ' + message;
    statusEl.dataset.state = 'error';
    statusEl.textContent = 'The replay cannot be shown: ' + message;
    statusEl.classList.add('visible');
  }
  window.addEventListener('error', (e) => fail(e.message || String(e.error)));
  window.addEventListener('unhandledrejection', (e) => fail(String(e.reason)));
  try {
    main();
  } catch (e) {
    fail(e && e.message ? e.message : String(e));
  }

  function main() {
    if (typeof THREE === 'undefined') throw new Error('three.js did not load');
    const D = JSON.parse(document.getElementById('replay-data').textContent);
    const $ = (id) => document.getElementById(id);
    const V = (a) => new THREE.Vector3(a[0], a[1], a[2]);
    const fmt = (x, d) => (Math.abs(x) < 0.5 * Math.pow(10, -d) ? 0 : x).toFixed(d);
    const nb = D.bodies.length;
    const nj = D.joints.length;
    const COLORS = {
      robot: [0xe8772e, 0xd4621a], base: 0x8a8f98, ghost: 0x2aa7c9, wall: 0x7d8ca3,
      target: 0x1f9d55, hand: 0x222222, contact: 0xd62828, push: 0xa21caf,
    };
    const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
      '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
    const hex = (c) => '#' + c.toString(16).padStart(6, '0');

    // --- Renderer, camera, lights. ---
    const view = $('view');
    const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    renderer.setPixelRatio(window.devicePixelRatio || 1);
    view.appendChild(renderer.domElement);
    const scene = new THREE.Scene();
    scene.background = new THREE.Color(0xf3f4f6);
    const g = V(D.gravity);
    const up = g.lengthSq() > 0 ? g.clone().negate().normalize() : new THREE.Vector3(0, 0, 1);
    const camera = new THREE.PerspectiveCamera(40, 1, 0.005, 200);
    camera.up.copy(up);
    const hemi = new THREE.HemisphereLight(0xffffff, 0x8090a0, 0.75);
    hemi.position.copy(up);
    scene.add(hemi);
    const sun = new THREE.DirectionalLight(0xffffff, 0.55);
    scene.add(sun);

    // --- The extent of the motion: every shape's bounding sphere at sampled poses of every run,
    // the keyframes and the hand targets; then the walls' parts near it.
    const spheres = D.bodies.map((b) => b.shapes.map((s) => {
      let c = new THREE.Vector3();
      let r;
      if (s.kind === 'box') r = V(s.size).length() / 2;
      else if (s.kind === 'sphere') r = s.radius;
      else if (s.kind === 'hull') {
        const hb = new THREE.Box3().setFromArray(D.meshes[s.mesh].vertices);
        c = hb.getCenter(c);
        r = hb.getSize(new THREE.Vector3()).length() / 2;
      } else r = s.radius + s.length / 2;
      c.applyQuaternion(new THREE.Quaternion().fromArray(s.pose, 3)).add(V(s.pose));
      return { c, r };
    }));
    const box = new THREE.Box3();
    const q = new THREE.Quaternion();
    function growPoses(poses, offset) {
      spheres.forEach((list, b) => {
        const at = offset + 7 * b;
        q.fromArray(poses, at + 3);
        for (const { c, r } of list) {
          const w = c.clone().applyQuaternion(q).add(V(poses.slice(at, at + 3)));
          box.expandByPoint(w.clone().addScalar(r));
          box.expandByPoint(w.clone().addScalar(-r));
        }
        box.expandByPoint(V(poses.slice(at, at + 3)));
      });
    }
    for (const run of D.runs) {
      const n = run.t.length;
      const stride = Math.max(1, Math.floor(n / 200));
      for (let i = 0; i < n; i += stride) growPoses(run.poses, i * 7 * nb);
      if (n) growPoses(run.poses, (n - 1) * 7 * nb);
    }
    for (const k of D.keyframes) growPoses(k.poses, 0);
    for (const t of D.hand_targets) box.expandByPoint(V(t.p));
    if (box.isEmpty()) box.expandByPoint(new THREE.Vector3());
    const motionBox = box.clone();
    for (const w of D.walls) {
      // A wall's part near the motion only: a wide wall would shrink the robot to a speck.
      const c = V(w.center);
      const h = V(w.half);
      const near = motionBox.clampPoint(c, new THREE.Vector3());
      box.expandByPoint(near.clone().max(c.clone().sub(h)).min(c.clone().add(h)));
    }
    // The scene drawn: the motion and the walls near it (the ground spans it).
    const sceneCenter = box.getCenter(new THREE.Vector3());
    const sceneSize = Math.max(box.getSize(new THREE.Vector3()).length(), 0.2);
    // The view: the whole scene; or, for a walk (`D.follow`), the robot at its first pose, the
    // camera then following its root body (body 0) along the ground.
    let center = sceneCenter;
    let size = sceneSize;
    if (D.follow && D.runs.length && D.runs[0].t.length) {
      const whole = box.clone();
      box.makeEmpty();
      growPoses(D.runs[0].poses, 0);
      center = box.getCenter(new THREE.Vector3());
      // With room for the steps and swings around it.
      size = 1.6 * Math.max(box.getSize(new THREE.Vector3()).length(), 0.2);
      box.copy(whole);
    }

    // --- The robot: one group per body, its collision shapes in it; and its ghost. ---
    const geometryCache = new Map();
    function geometry(b, k, s) {
      const key = b + '/' + k;
      if (geometryCache.has(key)) return geometryCache.get(key);
      let geo;
      if (s.kind === 'box') geo = new THREE.BoxGeometry(s.size[0], s.size[1], s.size[2]);
      else if (s.kind === 'sphere') geo = new THREE.SphereGeometry(s.radius, 24, 16);
      else if (s.kind === 'cylinder') {
        // three's cylinder is along y, URDF's along z.
        geo = new THREE.CylinderGeometry(s.radius, s.radius, s.length, 24).rotateX(Math.PI / 2);
      } else if (s.kind === 'capsule') {
        geo = new THREE.CapsuleGeometry(s.radius, s.length, 6, 16).rotateX(Math.PI / 2);
      } else if (s.kind === 'hull') {
        const m = D.meshes[s.mesh];
        const indexed = new THREE.BufferGeometry();
        indexed.setAttribute('position', new THREE.Float32BufferAttribute(m.vertices, 3));
        indexed.setIndex(m.triangles);
        geo = indexed.toNonIndexed();
        geo.computeVertexNormals();
      }
      geometryCache.set(key, geo);
      return geo;
    }
    function robot(material) {
      return D.bodies.map((b, i) => {
        const group = new THREE.Group();
        b.shapes.forEach((s, k) => {
          const geo = geometry(i, k, s);
          if (!geo) return;
          const mesh = new THREE.Mesh(geo, material(i));
          mesh.position.fromArray(s.pose, 0);
          mesh.quaternion.fromArray(s.pose, 3);
          group.add(mesh);
        });
        scene.add(group);
        return group;
      });
    }
    const robotMaterials = COLORS.robot.map((c) => new THREE.MeshPhongMaterial({ color: c, shininess: 25 }));
    const baseMaterial = new THREE.MeshPhongMaterial({ color: COLORS.base, shininess: 25 });
    const bodies = robot((i) => (i === 0 ? baseMaterial : robotMaterials[i % 2]));
    // Pushed back in depth: where the robot is on its keyframe, the robot shows, not the ghost.
    const ghostMaterial = new THREE.MeshPhongMaterial({
      color: COLORS.ghost, transparent: true, opacity: 0.3, depthWrite: false,
      polygonOffset: true, polygonOffsetFactor: 2, polygonOffsetUnits: 8,
    });
    const ghost = D.keyframes.length ? robot(() => ghostMaterial) : [];
    function pose(groups, poses, offset) {
      groups.forEach((grp, b) => {
        const at = offset + 7 * b;
        grp.position.fromArray(poses, at);
        grp.quaternion.fromArray(poses, at + 3);
      });
    }

    // --- The scene: walls, ground or a reference grid, world axes. ---
    for (const w of D.walls) {
      const geo = new THREE.BoxGeometry(2 * w.half[0], 2 * w.half[1], 2 * w.half[2]);
      const mesh = new THREE.Mesh(geo, new THREE.MeshPhongMaterial({
        color: COLORS.wall, transparent: true, opacity: 0.45, depthWrite: false,
      }));
      mesh.position.fromArray(w.center);
      const edges = new THREE.LineSegments(new THREE.EdgesGeometry(geo),
        new THREE.LineBasicMaterial({ color: 0x4a5568 }));
      edges.position.fromArray(w.center);
      scene.add(mesh, edges);
    }
    const cells = [0.05, 0.1, 0.25, 0.5, 1, 2, 5].find((c) => (2 * sceneSize) / c <= 60) || 10;
    const gridSpan = Math.ceil((2 * sceneSize) / cells) * cells;
    const grid = new THREE.GridHelper(gridSpan, Math.round(gridSpan / cells), 0x9aa5b1, 0xcbd2d9);
    let groundNote;
    if (D.ground) {
      // The plant's ground: the half-space z ≤ height in the world.
      const plane = new THREE.Mesh(new THREE.PlaneGeometry(gridSpan, gridSpan),
        new THREE.MeshPhongMaterial({ color: 0xd9e2d0, side: THREE.DoubleSide }));
      plane.position.set(sceneCenter.x, sceneCenter.y, D.ground.height);
      grid.rotateX(Math.PI / 2);
      grid.position.set(sceneCenter.x, sceneCenter.y, D.ground.height + 1e-4);
      scene.add(plane);
      groundNote = 'ground (z = ' + D.ground.height + ' m), grid ' + cells + ' m';
    } else {
      // No ground in the scene: a reference grid ⟂ up, just below the lowest point drawn.
      let low = Infinity;
      for (let i = 0; i < 8; i++) {
        const c = new THREE.Vector3(i & 1 ? box.max.x : box.min.x, i & 2 ? box.max.y : box.min.y,
          i & 4 ? box.max.z : box.min.z);
        low = Math.min(low, c.dot(up));
      }
      grid.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), up);
      grid.position.copy(sceneCenter).addScaledVector(up, low - sceneCenter.dot(up));
      groundNote = 'reference grid, ' + cells + ' m cells, ⟂ up, below the motion (no ground in this scene)';
    }
    scene.add(grid);
    const axisLength = Math.max(0.05, 0.12 * size);
    // The world frame, drawn over everything (it sits where the robot is often based).
    const axesHelper = new THREE.AxesHelper(axisLength);
    axesHelper.material.depthTest = false;
    axesHelper.renderOrder = 10;
    scene.add(axesHelper);
    ['x', 'y', 'z'].forEach((name, i) => {
      const canvas = document.createElement('canvas');
      canvas.width = canvas.height = 64;
      const c = canvas.getContext('2d');
      c.font = 'bold 48px sans-serif';
      c.textAlign = 'center';
      c.textBaseline = 'middle';
      c.fillStyle = ['#d62728', '#2ca02c', '#1f5fd6'][i];
      c.fillText(name, 32, 34);
      const sprite = new THREE.Sprite(new THREE.SpriteMaterial({
        map: new THREE.CanvasTexture(canvas), depthTest: false,
      }));
      const at = [0, 0, 0];
      at[i] = axisLength * 1.15;
      sprite.position.fromArray(at);
      sprite.scale.setScalar(axisLength * 0.3);
      scene.add(sprite);
    });

    // --- Targets: hand targets as points, the hand point, the line between. ---
    const targetRadius = Math.max(0.006, 0.012 * size);
    const targets = D.hand_targets.map((t) => {
      const mesh = new THREE.Mesh(new THREE.SphereGeometry(targetRadius, 20, 12),
        new THREE.MeshPhongMaterial({ color: COLORS.target, transparent: true, opacity: 0.3 }));
      mesh.position.fromArray(t.p);
      scene.add(mesh);
      return mesh;
    });
    let handMarker = null;
    let handLine = null;
    if (D.hand) {
      handMarker = new THREE.Mesh(new THREE.SphereGeometry(targetRadius * 0.55, 16, 10),
        new THREE.MeshBasicMaterial({ color: COLORS.hand }));
      scene.add(handMarker);
      handLine = new THREE.Line(new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3()]),
        new THREE.LineBasicMaterial({ color: COLORS.target }));
      scene.add(handLine);
    }

    // --- Arrows: the environment's contact forces, the pushes. ---
    // The arrows' scale: the larger of the pushes and the 95th percentile of the contact forces
    // (an impact's spike would shrink a steady press to nothing) is a fifth of the scene.
    const magnitudes = [];
    for (const run of D.runs) {
      for (const c of run.contacts) magnitudes.push(Math.hypot(c[2], c[3], c[4]));
    }
    magnitudes.sort((a, b) => a - b);
    let refForce = magnitudes.length ? magnitudes[Math.floor(0.95 * (magnitudes.length - 1))] : 0;
    for (const p of D.pushes) refForce = Math.max(refForce, V(p.force).length());
    const anyContact = magnitudes.length > 0;
    const metresPerNewton = refForce > 0 ? (0.2 * size) / refForce : 0;
    const arrows = { contact: [], push: [] };
    const shaftGeometry = new THREE.CylinderGeometry(1, 1, 1, 12);
    const headGeometry = new THREE.ConeGeometry(1, 1, 16);
    const yAxis = new THREE.Vector3(0, 1, 0);
    // An arrow from `origin` along `force`, |force| × metresPerNewton long (a shaft and a head).
    function arrow(kind, index, origin, force) {
      const pool = arrows[kind];
      while (pool.length <= index) {
        const material = new THREE.MeshPhongMaterial({ color: COLORS[kind] });
        const group = new THREE.Group();
        group.add(new THREE.Mesh(shaftGeometry, material), new THREE.Mesh(headGeometry, material));
        scene.add(group);
        pool.push(group);
      }
      const a = pool[index];
      const f = force.length();
      const length = f * metresPerNewton;
      a.visible = length > 1e-6;
      if (!a.visible) return;
      const head = Math.min(0.35 * length, 0.04 * size);
      const r = 0.004 * size;
      const [shaft, cone] = a.children;
      shaft.scale.set(r, length - head, r);
      shaft.position.y = (length - head) / 2;
      cone.scale.set(2.5 * r, head, 2.5 * r);
      cone.position.y = length - head / 2;
      a.position.copy(origin);
      a.quaternion.setFromUnitVectors(yAxis, force.clone().divideScalar(f));
    }
    const bodyPoint = (b, local) => {
      const grp = bodies[b];
      return local.clone().applyQuaternion(grp.quaternion).add(grp.position);
    };

    // --- The panels. ---
    $('heading').textContent = D.scenario + ' — ' + D.robot;
    const info = [
      ['kind', D.kind + ', ' + D.mode],
      ['scenario', D.scenario_file],
      ['URDF', D.urdf],
      ['joints', nj + ' (' + D.joints.map((j) => j.name).join(', ') + ')'],
      ['shapes', 'collision shapes; meshes as the convex hulls of their vertices, as the plant simulates them'],
      ['samples', D.decimation],
      ['view', 'drag: turn, wheel: zoom, right-drag: pan; up is against gravity' + (D.follow ? '; the view follows the root body' : '')],
    ];
    $('info').innerHTML = '';
    for (const [k, v] of info) {
      const div = document.createElement('div');
      const key = document.createElement('span');
      key.className = 'k';
      key.textContent = k + ': ';
      div.append(key, document.createTextNode(v));
      $('info').append(div);
    }
    for (const n of D.notes) {
      const li = document.createElement('li');
      li.textContent = n;
      $('notes').append(li);
    }
    const runSelect = $('run');
    D.runs.forEach((r, i) => runSelect.add(new Option(r.name, String(i))));
    const bars = D.joints.map((j, i) => {
      const row = document.createElement('div');
      row.className = 'row';
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = j.name;
      name.title = j.name;
      name.style.color = PALETTE[i % PALETTE.length];
      const track = document.createElement('div');
      track.className = 'track';
      const mid = document.createElement('div');
      mid.className = 'mid';
      const fill = document.createElement('div');
      fill.className = 'fill';
      track.append(fill, mid);
      const val = document.createElement('span');
      val.className = 'val';
      row.append(name, track, val);
      $('bars').append(row);
      return { fill, val };
    });
    const legend = [
      [hex(COLORS.robot[0]), 'robot (collision shapes)'],
      [hex(COLORS.base), D.floating_base ? 'floating base (the root body)' : 'fixed base'],
    ];
    if (D.keyframes.length) legend.push([hex(COLORS.ghost), 'ghost: the next keyframe\'s pose']);
    if (D.hand_targets.length) {
      legend.push([hex(COLORS.target), 'hand targets (the current one solid), line to the hand']);
      legend.push([hex(COLORS.hand), 'hand point']);
    }
    if (metresPerNewton > 0) {
      const scale = '10 cm = ' + (0.1 / metresPerNewton).toPrecision(3) + ' N';
      if (anyContact) legend.push([hex(COLORS.contact), 'contact force: the environment on a body, summed (drawn at the hand point, or at the body\'s centre of mass: the plant reports no contact point), ' + scale]);
      if (D.pushes.length) legend.push([hex(COLORS.push), 'push (at the body\'s centre of mass), ' + scale]);
    }
    if (D.walls.length) legend.push([hex(COLORS.wall), 'walls']);
    legend.push(['#cbd2d9', groundNote]);
    legend.push(['linear-gradient(90deg,#d62728 33%,#2ca02c 33% 66%,#1f5fd6 66%)', 'world frame: x, y, z']);
    for (const [color, text] of legend) {
      const div = document.createElement('div');
      const sw = document.createElement('span');
      sw.className = 'sw';
      sw.style.background = color;
      div.append(sw, document.createTextNode(text));
      $('legend').append(div);
    }

    // --- The torque plot: τ / effort of every joint over the run, cursor at t. ---
    const plot = $('plot');
    const dpr = window.devicePixelRatio || 1;
    plot.width = Math.round(270 * dpr);
    plot.height = Math.round(120 * dpr);
    const plotStatic = document.createElement('canvas');
    plotStatic.width = plot.width;
    plotStatic.height = plot.height;
    let tEnd = 0;
    for (const r of D.runs) tEnd = Math.max(tEnd, r.t.length ? r.t[r.t.length - 1] : 0);
    const px = (t) => (tEnd > 0 ? (t / tEnd) * plot.width : 0);
    // The plot's scale: the run's largest |τ / effort| (at least 1 %), shown as ±that.
    let plotScale = 1;
    const py = (v) => plot.height * (0.5 - 0.42 * Math.max(-1.1, Math.min(1.1, v / plotScale)));
    function drawPlot(run) {
      plotScale = 0.01;
      run.t.forEach((_, i) => {
        for (let j = 0; j < nj; j++) {
          plotScale = Math.max(plotScale, Math.abs(run.tau[i * nj + j] / (D.joints[j].effort || 1)));
        }
      });
      const c = plotStatic.getContext('2d');
      c.clearRect(0, 0, plot.width, plot.height);
      c.fillStyle = '#fff';
      c.fillRect(0, 0, plot.width, plot.height);
      c.strokeStyle = '#cbd2d9';
      c.lineWidth = dpr;
      c.setLineDash([3 * dpr, 3 * dpr]);
      for (const k of D.keyframes.concat(D.hand_targets)) {
        c.beginPath();
        c.moveTo(px(k.t), 0);
        c.lineTo(px(k.t), plot.height);
        c.stroke();
      }
      c.setLineDash([]);
      for (const v of [-plotScale, 0, plotScale]) {
        c.beginPath();
        c.moveTo(0, py(v));
        c.lineTo(plot.width, py(v));
        c.stroke();
      }
      for (let j = 0; j < nj; j++) {
        const effort = D.joints[j].effort || 1;
        c.strokeStyle = PALETTE[j % PALETTE.length];
        c.beginPath();
        run.t.forEach((t, i) => {
          const y = py(run.tau[i * nj + j] / effort);
          if (i === 0) c.moveTo(px(t), y);
          else c.lineTo(px(t), y);
        });
        c.stroke();
      }
      c.fillStyle = '#52606d';
      c.font = 10 * dpr + 'px sans-serif';
      const pct = (100 * plotScale >= 10 ? Math.round(100 * plotScale) : (100 * plotScale).toPrecision(2)) + ' % of effort';
      c.fillText('+' + pct, 2 * dpr, py(plotScale) - 2 * dpr);
      c.fillText('−' + pct, 2 * dpr, py(-plotScale) + 10 * dpr);
    }

    // --- State, and drawing the state at time t. ---
    let runIndex = 0;
    let t = 0;
    let playing = false;
    const slider = $('time');
    slider.max = String(Math.round(tEnd * 1000));
    function sampleAt(run, time) {
      let lo = 0;
      let hi = run.t.length - 1;
      if (hi < 0) return -1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (run.t[mid] <= time + 1e-9) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }
    function update() {
      const run = D.runs[runIndex];
      const i = sampleAt(run, t);
      if (i >= 0) pose(bodies, run.poses, i * 7 * nb);
      if (D.follow && i >= 0) {
        // Keep the root body where the view looks, along the ground (the user's turn and zoom kept).
        const at = i * 7 * nb;
        const d = V(run.poses.slice(at, at + 3)).sub(controls.target);
        d.addScaledVector(up, -d.dot(up));
        controls.target.add(d);
        camera.position.add(d);
      }
      // The next keyframe (the one the controller heads for), as a ghost.
      let target = '';
      if (D.keyframes.length) {
        let k = D.keyframes.findIndex((kf) => kf.t >= t - 1e-9);
        if (k < 0) k = D.keyframes.length - 1;
        pose(ghost, D.keyframes[k].poses, 0);
        target = 'ghost: keyframe ' + (k + 1) + '/' + D.keyframes.length + ' at ' + D.keyframes[k].t + ' s';
      }
      if (D.hand_targets.length) {
        let k = -1;
        D.hand_targets.forEach((ht, n) => { if (ht.t <= t + 1e-9) k = n; });
        targets.forEach((m, n) => { m.material.opacity = n === k ? 1 : 0.3; });
        if (k >= 0) {
          const ht = D.hand_targets[k];
          target = 'hand target ' + (k + 1) + '/' + D.hand_targets.length + ' (from ' + ht.t + ' s)' + (ht.press ? ', behind the wall: pressed' : '');
        }
        if (handMarker && i >= 0) {
          const p = bodyPoint(D.hand.body, V(D.hand.point));
          handMarker.position.copy(p);
          handLine.visible = k >= 0;
          if (k >= 0) handLine.geometry.setFromPoints([p, V(D.hand_targets[k].p)]);
        }
      }
      $('target').textContent = target;
      // Contact forces at this sample, pushes in force now.
      let n = 0;
      const forces = [];
      if (i >= 0) {
        for (const c of run.contacts) {
          if (c[0] !== i) continue;
          const b = c[1];
          const local = D.hand && D.hand.body === b ? V(D.hand.point) : V(D.bodies[b].com);
          const f = new THREE.Vector3(c[2], c[3], c[4]);
          arrow('contact', n++, bodyPoint(b, local), f);
          forces.push('contact on ' + D.bodies[b].link + ': ' + f.length().toFixed(1) + ' N');
        }
      }
      for (let k = n; k < arrows.contact.length; k++) arrows.contact[k].visible = false;
      let m = 0;
      for (const p of D.pushes) {
        if (t >= p.start - 1e-9 && t < p.start + p.duration) {
          arrow('push', m++, bodyPoint(p.body, V(D.bodies[p.body].com)), V(p.force));
          forces.push('push on ' + p.link + ': ' + V(p.force).length().toFixed(1) + ' N');
        }
      }
      for (let k = m; k < arrows.push.length; k++) arrows.push[k].visible = false;
      $('forces').textContent = forces.join('; ');
      // Torques.
      for (let j = 0; j < nj; j++) {
        const tau = i >= 0 ? run.tau[i * nj + j] : 0;
        const effort = D.joints[j].effort || 1;
        const r = Math.max(-1, Math.min(1, tau / effort));
        const fill = bars[j].fill;
        fill.style.left = (r < 0 ? 50 + 50 * r : 50) + '%';
        fill.style.width = 50 * Math.abs(r) + '%';
        const a = Math.abs(r);
        fill.style.background = a >= 0.9 ? '#d62828' : a >= 0.5 ? '#f0a202' : '#2f9e44';
        bars[j].val.textContent = fmt(tau, 2) + (D.joints[j].prismatic ? ' N' : ' N·m');
        bars[j].val.title = 'limit ' + effort;
      }
      const c = plot.getContext('2d');
      c.drawImage(plotStatic, 0, 0);
      c.strokeStyle = '#111';
      c.lineWidth = 1.5 * dpr;
      c.beginPath();
      c.moveTo(px(t), 0);
      c.lineTo(px(t), plot.height);
      c.stroke();
      $('clock').textContent = 't = ' + t.toFixed(2) + ' / ' + tEnd.toFixed(2) + ' s';
      slider.value = String(Math.round(t * 1000));
    }
    function selectRun(k) {
      runIndex = Math.max(0, Math.min(D.runs.length - 1, k));
      runSelect.value = String(runIndex);
      const run = D.runs[runIndex];
      $('summary').textContent = run.summary;
      drawPlot(run);
      update();
    }
    function setPlaying(on) {
      playing = on;
      $('play').textContent = on ? '❚❚' : '▶';
    }

    // --- The camera: from the side the motion is thinnest, a little above, all in view. ---
    const axes = [new THREE.Vector3(1, 0, 0), new THREE.Vector3(0, 1, 0), new THREE.Vector3(0, 0, 1)];
    const least = axes.reduce((a, b) => (Math.abs(b.dot(up)) < Math.abs(a.dot(up)) ? b : a));
    const h1 = new THREE.Vector3().crossVectors(up, least).normalize();
    const h2 = new THREE.Vector3().crossVectors(up, h1).normalize();
    const extent = motionBox.getSize(new THREE.Vector3());
    const along = (h) => Math.abs(h.x) * extent.x + Math.abs(h.y) * extent.y + Math.abs(h.z) * extent.z;
    let side = along(h1) <= along(h2) ? h1 : h2;
    const other = side === h1 ? h2 : h1;
    const biggest = Math.max(Math.abs(side.x), Math.abs(side.y), Math.abs(side.z));
    if ([side.x, side.y, side.z].find((x) => Math.abs(x) === biggest) < 0) side = side.clone().negate();
    const dir = side.clone().addScaledVector(other, 0.35).addScaledVector(up, 0.35).normalize();
    const distance = (0.42 * size) / Math.sin((camera.fov * Math.PI) / 360);
    camera.position.copy(center).addScaledVector(dir, distance);
    sun.position.copy(dir).addScaledVector(up, 1).multiplyScalar(10);
    const controls = new THREE.OrbitControls(camera, renderer.domElement);
    controls.target.copy(center);
    controls.update();

    function resize() {
      const w = Math.max(1, view.clientWidth);
      const h = Math.max(1, view.clientHeight);
      renderer.setSize(w, h);
      camera.aspect = w / h;
      camera.updateProjectionMatrix();
    }
    window.addEventListener('resize', resize);
    resize();

    // --- Controls. ---
    runSelect.addEventListener('change', () => selectRun(Number(runSelect.value)));
    slider.addEventListener('input', () => {
      setPlaying(false);
      t = Number(slider.value) / 1000;
      update();
    });
    $('play').addEventListener('click', () => {
      if (!playing && t >= tEnd) t = 0;
      setPlaying(!playing);
    });
    const step = (sign) => {
      const run = D.runs[runIndex];
      const i = Math.max(0, Math.min(run.t.length - 1, sampleAt(run, t) + sign));
      t = run.t[i] || 0;
      setPlaying(false);
      update();
    };
    window.addEventListener('keydown', (e) => {
      if (e.target && e.target.tagName === 'SELECT') return;
      if (e.key === ' ') { $('play').click(); e.preventDefault(); }
      else if (e.key === 'ArrowRight') { step(1); e.preventDefault(); }
      else if (e.key === 'ArrowLeft') { step(-1); e.preventDefault(); }
      else if (e.key === 'Home') { t = 0; update(); }
    });

    // `replay.html#run=NAME&t=SECONDS&play=1` opens there.
    const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
    const named = D.runs.findIndex((r) => r.name === hash.get('run'));
    t = Math.max(0, Math.min(tEnd, Number(hash.get('t')) || 0));
    selectRun(named >= 0 ? named : 0);
    setPlaying(hash.get('play') === '1');

    let last = performance.now();
    let frames = 0;
    function frame(now) {
      const dt = Math.min(0.1, (now - last) / 1000);
      last = now;
      if (playing) {
        t += dt * Number($('speed').value);
        if (t >= tEnd) {
          t = tEnd;
          setPlaying(false);
        }
        update();
      }
      controls.update();
      renderer.render(scene, camera);
      frames += 1;
      statusEl.dataset.frames = String(frames);
      requestAnimationFrame(frame);
    }
    renderer.render(scene, camera);
    const gl = renderer.getContext();
    statusEl.dataset.gl = String(gl.getParameter(gl.VERSION));
    statusEl.dataset.state = 'ready';
    statusEl.textContent = 'ready';
    requestAnimationFrame(frame);
  }
})();

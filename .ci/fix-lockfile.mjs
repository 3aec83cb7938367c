// Adds lock entries for optional platform packages (other OSes/CPUs) that this machine's npm leaves out of
// package-lock.json; without them `npm ci` refuses the lock file as out of sync. Idempotent.
import fs from 'node:fs';
const file = process.argv[2];
const lock = JSON.parse(fs.readFileSync(file, 'utf8'));
const pkgs = lock.packages;
const osOf = (n) => (/darwin/.test(n) ? ['darwin'] : /win32/.test(n) ? ['win32'] : /android/.test(n) ? ['android'] : /freebsd/.test(n) ? ['freebsd'] : /openharmony/.test(n) ? ['openharmony'] : /linux/.test(n) ? ['linux'] : /wasm/.test(n) ? undefined : undefined);
const cpuOf = (n) => (/arm64|aarch64/.test(n) ? ['arm64'] : /x64/.test(n) ? ['x64'] : /ia32/.test(n) ? ['ia32'] : /arm-|arm$|gnueabihf|musleabihf|eabi/.test(n) ? ['arm'] : /ppc64/.test(n) ? ['ppc64'] : /s390x/.test(n) ? ['s390x'] : /riscv64/.test(n) ? ['riscv64'] : /loong64/.test(n) ? ['loong64'] : undefined);
let added = 0;
for (const [path, entry] of Object.entries(pkgs)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path ? `${path}/node_modules/${name}` : `node_modules/${name}`;
    if (pkgs[base] || pkgs[`node_modules/${name}`]) continue;
    const version = spec.replace(/^[\^~=]/, '');
    const e = { version, optional: true };
    const os = osOf(name), cpu = cpuOf(name);
    if (os) e.os = os;
    if (cpu) e.cpu = cpu;
    pkgs[`node_modules/${name}`] = e;
    added++;
  }
}
fs.writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log('added', added);

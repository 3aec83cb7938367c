import type { OsType } from '../../../entities/device.js';
import type { ScriptLanguage, ScriptParameterType, ScriptRunAs } from '../../../entities/script.js';

/*
 * The built-in library shipped with the service (`GET /scripts/system-library`, imported with
 * `POST /scripts/import/:id`) and the templates new scripts start from (`/script-library/templates`).
 * Data only: ids are stable, since imported copies record the one they came from.
 */

export interface LibraryParameter {
  name: string;
  type: ScriptParameterType;
  required?: boolean;
  default?: string | number | boolean;
  options?: string[];
  secret?: boolean;
  description?: string;
}

export interface SystemScript {
  id: string;
  name: string;
  description: string;
  language: ScriptLanguage;
  content: string;
  parameters: LibraryParameter[];
  runAs: ScriptRunAs;
  timeoutSeconds: number;
  osTypes: OsType[];
  category: string;
  tags: string[];
}

/** A starting point for a new script: the same shape, meant to be edited. */
export type ScriptTemplate = SystemScript;

const lines = (...text: string[]) => `${text.join('\n')}\n`;

export const SYSTEM_SCRIPTS: SystemScript[] = [
  {
    id: 'disk-cleanup-windows',
    name: 'Disk cleanup (Windows)',
    description: 'Deletes temporary files older than N days from the Windows and user temp folders and empties the recycle bin; prints the space freed.',
    language: 'powershell',
    runAs: 'system',
    timeoutSeconds: 1800,
    osTypes: ['windows'],
    category: 'Maintenance',
    tags: ['disk', 'cleanup'],
    parameters: [{ name: 'MaxAgeDays', type: 'number', default: 7, description: 'files older than this many days go' }],
    content: lines(
      'param([int]$MaxAgeDays = 7)',
      "$ErrorActionPreference = 'SilentlyContinue'",
      '$before = (Get-PSDrive -Name C).Free',
      '$cutoff = (Get-Date).AddDays(-$MaxAgeDays)',
      '$paths = @("$env:windir\\Temp", "$env:TEMP") + (Get-ChildItem "C:\\Users" -Directory | ForEach-Object { Join-Path $_.FullName "AppData\\Local\\Temp" })',
      'foreach ($p in $paths) {',
      '  Get-ChildItem -Path $p -Recurse -Force | Where-Object { -not $_.PSIsContainer -and $_.LastWriteTime -lt $cutoff } | Remove-Item -Force',
      '}',
      'Clear-RecycleBin -Force',
      '$freed = [math]::Round(((Get-PSDrive -Name C).Free - $before) / 1MB, 1)',
      'Write-Output "Freed $freed MB on C:"',
    ),
  },
  {
    id: 'disk-cleanup-linux',
    name: 'Disk cleanup (Linux)',
    description: 'Cleans the package cache, vacuums the systemd journal to a size limit and removes /tmp files older than N days; prints disk usage before and after.',
    language: 'bash',
    runAs: 'elevated',
    timeoutSeconds: 1800,
    osTypes: ['linux'],
    category: 'Maintenance',
    tags: ['disk', 'cleanup'],
    parameters: [
      { name: 'max_age_days', type: 'number', default: 7, description: '/tmp files older than this many days go' },
      { name: 'journal_size', type: 'string', default: '200M', description: 'journalctl --vacuum-size limit' },
    ],
    content: lines(
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      'MAX_AGE_DAYS="${max_age_days:-7}"',
      'JOURNAL_SIZE="${journal_size:-200M}"',
      'echo "Before:"; df -h /',
      'if command -v apt-get >/dev/null; then apt-get clean; fi',
      'if command -v dnf >/dev/null; then dnf clean all -q; fi',
      'if command -v journalctl >/dev/null; then journalctl --vacuum-size="$JOURNAL_SIZE" || true; fi',
      'find /tmp /var/tmp -xdev -type f -mtime +"$MAX_AGE_DAYS" -delete 2>/dev/null || true',
      'echo "After:"; df -h /',
    ),
  },
  {
    id: 'restart-service-windows',
    name: 'Restart a service (Windows)',
    description: 'Restarts a Windows service by name and waits until it is running again.',
    language: 'powershell',
    runAs: 'system',
    timeoutSeconds: 300,
    osTypes: ['windows'],
    category: 'Services',
    tags: ['service', 'restart'],
    parameters: [{ name: 'ServiceName', type: 'string', required: true, description: 'e.g. Spooler' }],
    content: lines(
      'param([Parameter(Mandatory = $true)][string]$ServiceName)',
      "$ErrorActionPreference = 'Stop'",
      'Restart-Service -Name $ServiceName -Force',
      "(Get-Service -Name $ServiceName).WaitForStatus('Running', [TimeSpan]::FromSeconds(120))",
      'Get-Service -Name $ServiceName | Format-Table -AutoSize Name, Status, StartType',
    ),
  },
  {
    id: 'restart-service-linux',
    name: 'Restart a service (Linux)',
    description: 'Restarts a systemd unit and shows its status; fails when it does not come back active.',
    language: 'bash',
    runAs: 'elevated',
    timeoutSeconds: 300,
    osTypes: ['linux'],
    category: 'Services',
    tags: ['service', 'restart'],
    parameters: [{ name: 'service', type: 'string', required: true, description: 'the unit, e.g. nginx' }],
    content: lines(
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      'systemctl restart "$service"',
      'sleep 2',
      'systemctl --no-pager status "$service" | head -n 15',
      'systemctl is-active --quiet "$service"',
    ),
  },
  {
    id: 'collect-event-logs',
    name: 'Collect event logs (Windows)',
    description: 'Prints the most recent errors and warnings of a Windows event log.',
    language: 'powershell',
    runAs: 'system',
    timeoutSeconds: 300,
    osTypes: ['windows'],
    category: 'Diagnostics',
    tags: ['logs', 'events'],
    parameters: [
      { name: 'LogName', type: 'select', options: ['System', 'Application', 'Security'], default: 'System' },
      { name: 'Hours', type: 'number', default: 24, description: 'how far back' },
      { name: 'MaxEvents', type: 'number', default: 100 },
    ],
    content: lines(
      "param([string]$LogName = 'System', [int]$Hours = 24, [int]$MaxEvents = 100)",
      'Get-WinEvent -FilterHashtable @{ LogName = $LogName; Level = 1, 2, 3; StartTime = (Get-Date).AddHours(-$Hours) } -MaxEvents $MaxEvents -ErrorAction SilentlyContinue |',
      '  Format-Table -AutoSize -Wrap TimeCreated, Id, LevelDisplayName, ProviderName, Message',
    ),
  },
  {
    id: 'collect-system-logs',
    name: 'Collect system logs (Linux)',
    description: 'Prints the journal entries of priority warning and worse since N hours ago.',
    language: 'bash',
    runAs: 'elevated',
    timeoutSeconds: 300,
    osTypes: ['linux'],
    category: 'Diagnostics',
    tags: ['logs'],
    parameters: [
      { name: 'hours', type: 'number', default: 24 },
      { name: 'lines', type: 'number', default: 200 },
    ],
    content: lines(
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      'journalctl --no-pager -p warning --since "${hours:-24} hours ago" -n "${lines:-200}"',
    ),
  },
  {
    id: 'install-windows-updates',
    name: 'Install Windows updates',
    description: 'Searches Windows Update for software updates not yet installed, installs them and reports whether a reboot is needed (Windows Update Agent API, no module needed).',
    language: 'powershell',
    runAs: 'system',
    timeoutSeconds: 7200,
    osTypes: ['windows'],
    category: 'Patching',
    tags: ['updates', 'patching'],
    parameters: [{ name: 'RebootIfRequired', type: 'boolean', default: false }],
    content: lines(
      'param([bool]$RebootIfRequired = $false)',
      '$session = New-Object -ComObject Microsoft.Update.Session',
      '$result = $session.CreateUpdateSearcher().Search("IsInstalled=0 and Type=\'Software\' and IsHidden=0")',
      'if ($result.Updates.Count -eq 0) { Write-Output "No updates available"; exit 0 }',
      '$updates = New-Object -ComObject Microsoft.Update.UpdateColl',
      'foreach ($u in $result.Updates) { if (-not $u.EulaAccepted) { $u.AcceptEula() }; [void]$updates.Add($u); Write-Output "Queued: $($u.Title)" }',
      '$downloader = $session.CreateUpdateDownloader(); $downloader.Updates = $updates; [void]$downloader.Download()',
      '$installer = $session.CreateUpdateInstaller(); $installer.Updates = $updates',
      '$install = $installer.Install()',
      'Write-Output "Result code: $($install.ResultCode); reboot required: $($install.RebootRequired)"',
      'if ($install.RebootRequired -and $RebootIfRequired) { Restart-Computer -Force }',
      'if ($install.ResultCode -ne 2) { exit 1 }',
    ),
  },
  {
    id: 'install-linux-updates',
    name: 'Install Linux updates',
    description: 'Refreshes the package lists and applies the available upgrades (apt, dnf or yum); reports whether a reboot is needed.',
    language: 'bash',
    runAs: 'elevated',
    timeoutSeconds: 7200,
    osTypes: ['linux'],
    category: 'Patching',
    tags: ['updates', 'patching'],
    parameters: [{ name: 'security_only', type: 'boolean', default: false, description: 'dnf/yum: security updates only' }],
    content: lines(
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      'if command -v apt-get >/dev/null; then',
      '  export DEBIAN_FRONTEND=noninteractive',
      '  apt-get update -q && apt-get -y -q upgrade',
      'elif command -v dnf >/dev/null; then',
      '  if [ "${security_only:-false}" = "true" ]; then dnf -y -q upgrade --security; else dnf -y -q upgrade; fi',
      'elif command -v yum >/dev/null; then',
      '  if [ "${security_only:-false}" = "true" ]; then yum -y -q update --security; else yum -y -q update; fi',
      'else echo "no supported package manager" >&2; exit 2; fi',
      'if [ -f /var/run/reboot-required ]; then echo "Reboot required"; else echo "No reboot required"; fi',
    ),
  },
  {
    id: 'install-macos-updates',
    name: 'Install macOS updates',
    description: 'Lists and installs the recommended software updates with softwareupdate.',
    language: 'bash',
    runAs: 'elevated',
    timeoutSeconds: 7200,
    osTypes: ['macos'],
    category: 'Patching',
    tags: ['updates', 'patching'],
    parameters: [],
    content: lines('#!/bin/bash', 'set -euo pipefail', 'softwareupdate --list', 'softwareupdate --install --recommended --agree-to-license'),
  },
  {
    id: 'flush-dns',
    name: 'Flush the DNS cache',
    description: 'Clears the resolver cache on Windows, macOS or Linux (systemd-resolved).',
    language: 'python',
    runAs: 'elevated',
    timeoutSeconds: 60,
    osTypes: ['windows', 'macos', 'linux'],
    category: 'Network',
    tags: ['dns', 'network'],
    parameters: [],
    content: lines(
      'import platform, subprocess, sys',
      'system = platform.system()',
      'commands = {',
      "    'Windows': [['ipconfig', '/flushdns']],",
      "    'Darwin': [['dscacheutil', '-flushcache'], ['killall', '-HUP', 'mDNSResponder']],",
      "    'Linux': [['resolvectl', 'flush-caches']],",
      '}.get(system)',
      'if commands is None:',
      "    sys.exit(f'unsupported system: {system}')",
      'for command in commands:',
      '    subprocess.run(command, check=True)',
      "print(f'DNS cache flushed on {system}')",
    ),
  },
  {
    id: 'system-info',
    name: 'System information',
    description: 'Prints the host name, operating system, uptime, CPU count, memory and disk usage (Python standard library only).',
    language: 'python',
    runAs: 'system',
    timeoutSeconds: 60,
    osTypes: ['windows', 'macos', 'linux'],
    category: 'Diagnostics',
    tags: ['inventory'],
    parameters: [],
    content: lines(
      'import os, platform, shutil, socket',
      "print(f'host: {socket.gethostname()}')",
      "print(f'os: {platform.system()} {platform.release()} ({platform.machine()})')",
      "print(f'python: {platform.python_version()}')",
      "print(f'cpus: {os.cpu_count()}')",
      "root = 'C:\\\\' if platform.system() == 'Windows' else '/'",
      'usage = shutil.disk_usage(root)',
      "print(f'disk {root}: {usage.used / 2**30:.1f} of {usage.total / 2**30:.1f} GiB used')",
    ),
  },
  {
    id: 'check-disk-space',
    name: 'Check free disk space',
    description: 'Fails (exit 1) when any fixed drive has less free space than the threshold, listing the drives.',
    language: 'powershell',
    runAs: 'system',
    timeoutSeconds: 60,
    osTypes: ['windows'],
    category: 'Monitoring',
    tags: ['disk'],
    parameters: [{ name: 'MinFreePercent', type: 'number', default: 10 }],
    content: lines(
      'param([int]$MinFreePercent = 10)',
      '$low = $false',
      'Get-CimInstance Win32_LogicalDisk -Filter "DriveType=3" | ForEach-Object {',
      '  $free = [math]::Round($_.FreeSpace / $_.Size * 100, 1)',
      '  Write-Output "$($_.DeviceID) $free% free"',
      '  if ($free -lt $MinFreePercent) { $low = $true }',
      '}',
      'if ($low) { exit 1 }',
    ),
  },
  {
    id: 'clear-print-queue',
    name: 'Clear the print queue',
    description: 'Stops the spooler, deletes stuck print jobs and starts it again.',
    language: 'cmd',
    runAs: 'system',
    timeoutSeconds: 120,
    osTypes: ['windows'],
    category: 'Services',
    tags: ['printing'],
    parameters: [],
    content: lines('@echo off', 'net stop spooler', 'del /Q /F /S "%systemroot%\\System32\\spool\\PRINTERS\\*.*"', 'net start spooler', 'echo Print queue cleared'),
  },
];

export const SCRIPT_TEMPLATES: ScriptTemplate[] = [
  {
    id: 'powershell-basic',
    name: 'PowerShell script with parameters',
    description: 'Parameters, stop on errors, output and an exit code the service records.',
    language: 'powershell',
    runAs: 'system',
    timeoutSeconds: 300,
    osTypes: ['windows'],
    category: 'Templates',
    tags: ['template'],
    parameters: [{ name: 'Target', type: 'string', required: true }],
    content: lines(
      'param([Parameter(Mandatory = $true)][string]$Target)',
      "$ErrorActionPreference = 'Stop'",
      'try {',
      '  Write-Output "Working on $Target"',
      '  exit 0',
      '} catch {',
      '  Write-Error $_',
      '  exit 1',
      '}',
    ),
  },
  {
    id: 'bash-basic',
    name: 'Bash script with parameters',
    description: 'Strict mode, a parameter read from the environment, and an error trap.',
    language: 'bash',
    runAs: 'system',
    timeoutSeconds: 300,
    osTypes: ['linux', 'macos'],
    category: 'Templates',
    tags: ['template'],
    parameters: [{ name: 'target', type: 'string', required: true }],
    content: lines('#!/usr/bin/env bash', 'set -euo pipefail', "trap 'echo \"failed at line $LINENO\" >&2' ERR", 'echo "Working on ${target}"'),
  },
  {
    id: 'python-basic',
    name: 'Python script with parameters',
    description: 'Reads its parameters from the environment and exits non-zero on failure.',
    language: 'python',
    runAs: 'system',
    timeoutSeconds: 300,
    osTypes: ['windows', 'macos', 'linux'],
    category: 'Templates',
    tags: ['template'],
    parameters: [{ name: 'target', type: 'string', required: true }],
    content: lines('import os, sys', '', 'def main() -> int:', "    target = os.environ['target']", "    print(f'Working on {target}')", '    return 0', '', "if __name__ == '__main__':", '    sys.exit(main())'),
  },
];

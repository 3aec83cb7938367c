import type { EntityManager } from '@mikro-orm/postgresql';
import { Role } from '../../../entities/role.js';
import { Membership, User } from '../../../entities/user.js';
import { hashPassword } from '../../auth/passwords.js';
import { PLATFORM_ADMIN_ROLE_ID, systemRoles } from '../../auth/permissions.js';
import type { Runtime } from '../../runtime.js';
import { randomToken } from '../../secrets.js';

// Two instances starting together must not both create the first admin.
const BOOTSTRAP_LOCK = 0x4a0d18;

/**
 * On every start: keep the seeded system roles in step with the code, and make sure someone can
 * log in (ADMIN_EMAIL/ADMIN_PASSWORD, or a generated admin@localhost on an empty database).
 */
export async function bootstrapIdentity(runtime: Runtime): Promise<void> {
  await runtime.orm.em.fork().transactional(async (em) => {
    await em.execute(`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`);
    for (const seed of systemRoles()) {
      const role = (await em.findOne(Role, { id: seed.id })) ?? em.create(Role, { id: seed.id, name: seed.name, scope: seed.scope, isSystem: true, permissions: [] });
      Object.assign(role, { name: seed.name, description: seed.description, scope: seed.scope, permissions: seed.permissions, isSystem: true });
    }
    await em.flush();

    const admin = runtime.config.admin;
    if (admin) {
      const email = admin.email.toLowerCase();
      if (!(await em.findOne(User, { email }))) {
        await createPlatformAdmin(em as EntityManager, email, admin.password);
        runtime.log.info({ email }, 'created platform admin from ADMIN_EMAIL');
      }
    } else if ((await em.count(User, {})) === 0) {
      const password = randomToken(18);
      await createPlatformAdmin(em as EntityManager, 'admin@localhost', password);
      runtime.log.warn({ email: 'admin@localhost', password }, 'created the first platform admin; this password is shown only once, change it after signing in');
    }
  });
}

async function createPlatformAdmin(em: EntityManager, email: string, password: string): Promise<void> {
  const user = em.create(User, { email, name: 'Platform Admin', passwordHash: await hashPassword(password), status: 'active' });
  em.create(Membership, { userId: user.id, scope: 'system', roleId: PLATFORM_ADMIN_ROLE_ID });
  await em.flush();
}

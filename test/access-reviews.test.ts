import type { Permission } from '../src/auth/permissions.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { sql } from './support/db.js';
import { addMembership, buildOrg, buildPartner, buildUser, permissionsOf, systemRole, type BuiltUser } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

/** Completing a review removes access, so the reviewer holds every read that bob's and carol's Viewer role grants. */
const REVIEWER: Permission[] = [...permissionsOf('Organization Viewer'), 'access_reviews:write'];

/** An organization with its reviewer and three members; bob also belongs to a second organization. */
async function team() {
  const org = await buildOrg(app);
  const reviewer = await buildUser(app, { orgId: org.id, can: REVIEWER, email: `reviewer-${org.id}@example.test` });
  const alice = await buildUser(app, { orgId: org.id, role: 'Organization Technician', email: `alice-${org.id}@example.test` });
  const bob = await buildUser(app, { orgId: org.id, role: 'Organization Viewer', email: `bob-${org.id}@example.test` });
  const carol = await buildUser(app, { orgId: org.id, role: 'Organization Viewer', email: `carol-${org.id}@example.test` });
  const elsewhere = await buildOrg(app, { partnerId: org.partnerId });
  const bobElsewhere = await addMembership(app, bob.user.id, { orgId: elsewhere.id, role: 'Organization Viewer' });
  return { org, reviewer, alice, bob, carol, bobElsewhere };
}

const itemOf = (review: any, who: BuiltUser) => review.items.find((i: any) => i.userId === who.user.id);

describe('an organization review from start to completion', () => {
  test('snapshots members, refuses completion while pending, applies revocations in one go', async () => {
    const { org, reviewer, alice, bob, carol, bobElsewhere } = await team();
    const api = rest(app, reviewer.as);

    const created = await api.post('/access-reviews', { name: 'Q3 review', dueAt: '2030-01-01T00:00:00Z' });
    expect(created.status).toBe(201);
    const review = created.body;
    expect(review).toMatchObject({
      name: 'Q3 review',
      orgId: org.id,
      partnerId: org.partnerId,
      status: 'open',
      dueAt: '2030-01-01T00:00:00.000Z',
      createdBy: reviewer.user.id,
      completedAt: null,
      summary: { total: 4, pending: 4, approved: 0, revoked: 0 },
    });
    expect(itemOf(review, carol)).toEqual({
      id: expect.any(String),
      userId: carol.user.id,
      userEmail: carol.user.email,
      userName: 'Test User',
      membershipId: carol.membership.id,
      roleId: systemRole('Organization Viewer'),
      roleName: 'Organization Viewer',
      decision: 'pending',
      notes: null,
      decidedBy: null,
      decidedAt: null,
    });
    expect(review.items.map((i: any) => i.membershipId)).not.toContain(bobElsewhere.id);

    const early = await api.post(`/access-reviews/${review.id}/complete`);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ code: 'CONFLICT', message: 'All items must be decided before completing' });

    for (const who of [reviewer, alice]) {
      expect((await api.patch(`/access-reviews/${review.id}/items/${itemOf(review, who).id}`, { decision: 'approved' })).status).toBe(200);
    }
    const decided = await api.patch(`/access-reviews/${review.id}/items/${itemOf(review, bob).id}`, { decision: 'revoked', notes: 'left the team' });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ decision: 'revoked', notes: 'left the team', decidedBy: reviewer.user.id, decidedAt: expect.any(String) });
    expect((await api.patch(`/access-reviews/${review.id}/items/${itemOf(review, carol).id}`, { decision: 'maybe' })).status).toBe(400);
    await api.patch(`/access-reviews/${review.id}/items/${itemOf(review, carol).id}`, { decision: 'revoked' });

    const listed = await api.get('/access-reviews?status=open');
    expect(listed.body.data).toEqual([expect.objectContaining({ id: review.id, summary: { total: 4, pending: 0, approved: 2, revoked: 2 } })]);
    expect(listed.body.data[0]).not.toHaveProperty('items');

    // Everyone's sessions work until the review is completed.
    for (const who of [alice, bob, carol]) expect((await rest(app, who.as).get('/api-keys')).status).toBe(200);

    const completed = await api.post(`/access-reviews/${review.id}/complete`);
    expect(completed.status).toBe(200);
    expect(completed.body).toMatchObject({ status: 'completed', completedBy: reviewer.user.id, completedAt: expect.any(String), summary: { pending: 0, approved: 2, revoked: 2 } });

    // Carol had no other membership: disabled, her token dead. Bob keeps his other organization.
    expect((await rest(app, carol.as).get('/api-keys')).status).toBe(401);
    expect((await rest(app, bob.as).get('/api-keys')).status).toBe(401);
    expect((await rest(app, alice.as).get('/api-keys')).status).toBe(200);
    expect(await sql(app, 'select status, token_version from "user" where id = ?', [carol.user.id])).toEqual([{ status: 'disabled', token_version: 1 }]);
    expect(await sql(app, 'select status, token_version from "user" where id = ?', [bob.user.id])).toEqual([{ status: 'active', token_version: 0 }]);
    expect(await sql(app, 'select id from membership where user_id = ?', [bob.user.id])).toEqual([{ id: bobElsewhere.id }]);

    const audit = await api.get(`/audit?orgId=${org.id}&action=*access*&limit=50`);
    const actions = audit.body.data.map((r: any) => `${r.action}${r.action === 'user.access.revoke' ? `:${r.resourceId}:${r.details.disabled}` : ''}`).sort();
    expect(actions).toEqual(
      [
        'access_review.complete',
        'access_review.create',
        ...Array(4).fill('access_review.decide'),
        `user.access.revoke:${bob.user.id}:false`,
        `user.access.revoke:${carol.user.id}:true`,
      ].sort(),
    );

    const again = await api.post(`/access-reviews/${review.id}/complete`);
    expect(again.status).toBe(409);
    expect(again.body.message).toBe('Access review is already completed');
    expect((await api.patch(`/access-reviews/${review.id}/items/${itemOf(review, alice).id}`, { decision: 'revoked' })).status).toBe(409);
    expect((await rest(app, alice.as).get('/api-keys')).status).toBe(200);
  });

  test('the same flow over GraphQL', async () => {
    const { reviewer, carol } = await team();
    const created = await gql(app, reviewer.as, 'mutation { createAccessReview(input: { name: "gql" }) { id status items { id userId } } }');
    expect(created.body.errors).toBeUndefined();
    const review = created.body.data.createAccessReview;
    for (const item of review.items) {
      const decision = item.userId === carol.user.id ? 'revoked' : 'approved';
      const res = await gql(app, reviewer.as, 'mutation($r: ID!, $i: ID!, $d: AccessReviewVerdict!) { decideAccessReviewItem(reviewId: $r, itemId: $i, input: { decision: $d }) { decision } }', {
        r: review.id,
        i: item.id,
        d: decision,
      });
      expect(res.body.data.decideAccessReviewItem.decision).toBe(decision);
    }
    const done = await gql(app, reviewer.as, 'mutation($id: ID!) { completeAccessReview(id: $id) { status summary { revoked approved } } }', { id: review.id });
    expect(done.body.data.completeAccessReview).toEqual({ status: 'completed', summary: { revoked: 1, approved: 3 } });
    expect((await rest(app, carol.as).get('/api-keys')).status).toBe(401);
    const listed = await gql(app, reviewer.as, '{ accessReviews(status: completed) { data { id } pagination { total } } }');
    expect(listed.body.data.accessReviews).toEqual({ data: [{ id: review.id }], pagination: { total: 1 } });
  });

  test('a membership removed since the review began is skipped, not an error', async () => {
    const { reviewer, carol } = await team();
    const review = (await rest(app, reviewer.as).post('/access-reviews', { name: 'stale' })).body;
    for (const item of review.items) {
      await rest(app, reviewer.as).patch(`/access-reviews/${review.id}/items/${item.id}`, { decision: item.userId === carol.user.id ? 'revoked' : 'approved' });
    }
    await sql(app, 'delete from membership where id = ?', [carol.membership.id]);
    const res = await rest(app, reviewer.as).post(`/access-reviews/${review.id}/complete`);
    expect(res.status).toBe(200);
    const [row] = await sql(app, `select details from audit_log where action = 'access_review.complete' and resource_id = ?`, [review.id]);
    expect(row.details).toEqual({ approved: 3, revoked: 1, applied: 0 });
  });
});

describe('who may revoke whom', () => {
  test('a reviewer cannot revoke their own access or that of someone whose role grants more', async () => {
    const { org, reviewer: lead } = await team();
    const reviewer = await buildUser(app, { orgId: org.id, can: ['access_reviews:read', 'access_reviews:write', 'users:read'] });
    const decideAll = async (reviewId: string, items: any[], revoke: string) => {
      for (const item of items) {
        await rest(app, reviewer.as).patch(`/access-reviews/${reviewId}/items/${item.id}`, { decision: item.userId === revoke ? 'revoked' : 'approved' });
      }
    };

    const overLead = (await rest(app, reviewer.as).post('/access-reviews', { name: 'upward' })).body;
    await decideAll(overLead.id, overLead.items, lead.user.id);
    const refused = await rest(app, reviewer.as).post(`/access-reviews/${overLead.id}/complete`);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/^You cannot manage a user whose role grants permissions you do not hold/);
    expect((await rest(app, lead.as).get('/users/me')).status).toBe(200);

    const overSelf = (await rest(app, reviewer.as).post('/access-reviews', { name: 'self' })).body;
    await decideAll(overSelf.id, overSelf.items, reviewer.user.id);
    const self = await rest(app, reviewer.as).post(`/access-reviews/${overSelf.id}/complete`);
    expect(self.body).toEqual({ code: 'VALIDATION_ERROR', message: 'You cannot revoke your own access' });
  });
});

describe('access', () => {
  test('another organization’s review is 404; without the permission 403; completing needs MFA', async () => {
    const { reviewer, alice } = await team();
    const other = await team();
    const review = (await rest(app, reviewer.as).post('/access-reviews', { name: 'private' })).body;
    const item = review.items[0];
    const outsider = rest(app, other.reviewer.as);
    expect((await outsider.get(`/access-reviews/${review.id}`)).status).toBe(404);
    expect((await outsider.patch(`/access-reviews/${review.id}/items/${item.id}`, { decision: 'revoked' })).status).toBe(404);
    const complete = await outsider.post(`/access-reviews/${review.id}/complete`);
    expect(complete).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', message: 'Access review not found' } });
    expect((await outsider.get('/access-reviews')).body.data.map((r: any) => r.id)).not.toContain(review.id);
    expect((await outsider.post('/access-reviews', { name: 'theirs', orgId: reviewer.membership.orgId })).status).toBe(404);
    const viaGql = await gql(app, other.reviewer.as, 'query($id: ID!) { accessReview(id: $id) { id } }', { id: review.id });
    expect(viaGql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(await sql(app, 'select decision from access_review_item where id = ?', [item.id])).toEqual([{ decision: 'pending' }]);

    expect((await rest(app, alice.as).get('/access-reviews')).status).toBe(403);
    expect((await rest(app, alice.as).post('/access-reviews', { name: 'mine' })).status).toBe(403);

    const noMfa = await buildUser(app, { orgId: reviewer.membership.orgId!, can: ['access_reviews:write'], mfa: false });
    const res = await rest(app, noMfa.as).post(`/access-reviews/${review.id}/complete`);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('MFA_REQUIRED');
  });

  test('a partner reviews its own staff; its organizations’ admins cannot see that review', async () => {
    const partner = await buildPartner(app);
    const partnerReviewer = await buildUser(app, { partnerId: partner.id, can: ['access_reviews:read', 'access_reviews:write'] });
    const staff = await buildUser(app, { partnerId: partner.id, role: 'Partner Technician' });
    const org = await buildOrg(app, { partnerId: partner.id });
    const orgAdmin = await buildUser(app, { orgId: org.id, role: 'Organization Admin' });

    const res = await rest(app, partnerReviewer.as).post('/access-reviews', { name: 'staff', partnerId: partner.id });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ orgId: null, partnerId: partner.id });
    expect(res.body.items.map((i: any) => i.userId).sort()).toEqual([partnerReviewer.user.id, staff.user.id].sort());

    expect((await rest(app, orgAdmin.as).get(`/access-reviews/${res.body.id}`)).status).toBe(404);
    const orgReview = await rest(app, partnerReviewer.as).post('/access-reviews', { name: 'customer', orgId: org.id });
    expect(orgReview.body.items.map((i: any) => i.userId)).toEqual([orgAdmin.user.id]);
    const list = await rest(app, partnerReviewer.as).get('/access-reviews');
    expect(list.body.data.map((r: any) => r.id).sort()).toEqual([res.body.id, orgReview.body.id].sort());
    expect((await rest(app, partnerReviewer.as).post('/access-reviews', { name: 'nothing' })).body.message).toBe('Organization context required');
  });
});

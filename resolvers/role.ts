import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import {
  CloneRoleSchema,
  CreateRoleSchema,
  PermissionCatalogViewSchema,
  RoleListQuery,
  RoleViewSchema,
  UpdateRoleSchema,
  availablePermissions,
  cloneRole,
  createRole,
  deleteRole,
  effectivePermissionsAt,
  getRole,
  listRoles,
  updateRole,
  type CloneRoleInput,
  type CreateRoleInput,
  type RoleListInput,
  type RoleView,
  type UpdateRoleInput,
} from '../src/services/roles.js';

export const RoleObject = objectType('Role', RoleViewSchema);
const RolePage = objectType('RolePage', pageSchema(RoleViewSchema, 'RolePage'));
const PermissionCatalogObject = objectType('PermissionCatalog', PermissionCatalogViewSchema);
const RoleListArgs = argsType('RoleListArgs', RoleListQuery);
const CreateRoleInput = inputType('CreateRoleInput', CreateRoleSchema);
const UpdateRoleInput = inputType('UpdateRoleInput', UpdateRoleSchema);
const CloneRoleInput = inputType('CloneRoleInput', CloneRoleSchema);

@Resolver(() => RoleObject)
export class RoleResolver {
  @Query(() => RolePage, { description: 'System roles and the custom roles the caller sees.' })
  roles(@Ctx() { ctx }: GraphqlContext, @Args(() => RoleListArgs) args: RoleListInput) {
    return listRoles(ctx, args);
  }

  @Query(() => RoleObject)
  role(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getRole(ctx, id);
  }

  @Query(() => PermissionCatalogObject, { description: 'Every permission a role can grant.' })
  availablePermissions(@Ctx() { ctx }: GraphqlContext) {
    return availablePermissions(ctx);
  }

  @Mutation(() => RoleObject, { description: 'Needs an MFA session.' })
  createRole(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateRoleInput) input: CreateRoleInput) {
    return createRole(ctx, input);
  }

  @Mutation(() => RoleObject, { description: 'Custom roles only; needs an MFA session.' })
  updateRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateRoleInput) input: UpdateRoleInput) {
    return updateRole(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Custom roles nobody holds; needs an MFA session.' })
  async deleteRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteRole(ctx, id);
    return true;
  }

  @Mutation(() => RoleObject, { description: 'Needs an MFA session.' })
  cloneRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => CloneRoleInput, { nullable: true }) input?: CloneRoleInput) {
    return cloneRole(ctx, id, input ?? {});
  }

  @FieldResolver(() => [String], { description: 'The catalog permissions the role grants, wildcards expanded (REST `effective-permissions`).' })
  effectivePermissions(@Root() role: RoleView): string[] {
    return effectivePermissionsAt(role.scope, role.permissions);
  }
}
